"""The Python module name of a kernel's extension, which is also its `TORCH_EXTENSION_NAME`.

CPython imports a `.so` by calling `PyInit_<name>`, so the sources decide the name whenever they
define one: a hand-written `PyInit__C` (PyTorch's custom-op layout) or `PYBIND11_MODULE(<name>, m)`
with a literal name. Only sources that write `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)` leave it to
the gate, which then derives it from the kernel's manifest name. The manifest may state it (`module`);
the loader checks it against the sources when the manifest is read, the build names the `.so` by it.
"""

from __future__ import annotations

import re
from pathlib import Path

from gate.domain.manifest import KernelSpec
from gate.errors import ManifestError

_DEFINED_NAME = re.compile(rb"\bPyInit_(\w+)\s*\(|\bPYBIND11_MODULE\s*\(\s*(\w+)\s*,")
_GATE_CHOOSES = "TORCH_EXTENSION_NAME"


def defined_module_names(sources: list[str], src_dir: Path) -> set[str]:
    """The module names `sources` define for themselves (`PyInit_<name>`, `PYBIND11_MODULE(<name>,`);
    empty when they leave the name to `TORCH_EXTENSION_NAME`."""
    names: set[str] = set()
    for rel in sources:
        path = src_dir / rel
        if path.is_file():
            for init, pybind in _DEFINED_NAME.findall(path.read_bytes()):
                names.add((init or pybind).decode())
    return names - {_GATE_CHOOSES}


def derived_name(kernel_name: str) -> str:
    """The module name the gate gives a kernel whose sources leave it open: its manifest name with
    every non-word character as `_`, and `k_` before a leading digit (the one start a Python
    identifier forbids; `_C` stays `_C`)."""
    name = re.sub(r"\W", "_", kernel_name)
    return f"k_{name}" if name[:1].isdigit() else name


def extension_name(kernel: KernelSpec, src_dir: Path, *, key: str = "") -> str:
    """The Python module name of a kernel's extension, which is also `TORCH_EXTENSION_NAME`.

    The manifest's `module` when given, else the one name the sources define, else `derived_name`.
    A manifest `module` the sources contradict, or sources that define two names, raise
    `ManifestError` at `key` (default: the kernel's `module`): the built `.so` could not be imported
    under any single name.
    """
    defined = defined_module_names(kernel.sources, Path(src_dir))
    where = key or f"kernel {kernel.name!r}.module"
    if kernel.module:
        if defined and kernel.module not in defined:
            raise ManifestError(f"module = {kernel.module!r}, but the sources define "
                                f"{', '.join(f'PyInit_{n}' for n in sorted(defined))}", key=where)
        return kernel.module
    if len(defined) > 1:
        raise ManifestError(f"the sources define several modules ({', '.join(sorted(defined))}): "
                            "name the one to load with `module`", key=where)
    return defined.pop() if defined else derived_name(kernel.name)
