"""What a kernel's sources say of its extension: its Python module name, which is also its
`TORCH_EXTENSION_NAME`, and whether it registers torch ops.

CPython imports a `.so` by calling `PyInit_<name>`, so the sources decide the name whenever they
define one: a hand-written `PyInit__C` (PyTorch's custom-op layout) or `PYBIND11_MODULE(<name>, m)`
with a literal name. Only `PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)` leaves it to the gate, which then
derives it from the kernel's manifest name; a manifest `module` is checked against the sources.

Op registrations (`registering_file`) are looked for in the sources and every header of the checkout
they include: `TORCH_LIBRARY`, `_FRAGMENT`, `_IMPL` and any macro of the family (kernel-builder's
`TORCH_LIBRARY_EXPAND`). The sure way, the built module's own symbols, is
`gate.compiling.build.module_registers_ops`.
"""

from __future__ import annotations

import re
from pathlib import Path

from gate.compiling.build_cache import local_includes
from gate.domain.manifest import KernelSpec
from gate.errors import ManifestError
from gate.manifest.compile_flags import include_dir

_DEFINED_NAME = re.compile(rb"\bPyInit_(\w+)\s*\(|\bPYBIND11_MODULE\s*\(\s*(\w+)\s*,")
_GATE_CHOOSES = "TORCH_EXTENSION_NAME"
# A static registration with PyTorch's dispatcher (torch/library.h), or a macro of that family that
# expands to one (kernel-builder's `TORCH_LIBRARY_EXPAND`). torch keeps one op registry per process: a
# second `TORCH_LIBRARY` of a namespace aborts it, and `torch.ops.ns.op` is one entry, so two builds
# that register ops cannot share a process (issue 26).
TORCH_OP_REGISTRATION = re.compile(rb"\bTORCH_LIBRARY\w*\s*\(")
_PYBIND_FUNCTION = re.compile(rb"\bPYBIND11_MODULE\s*\(")


def read_files(kernel: KernelSpec, src_dir: Path) -> list[Path]:
    """`kernel.sources` inside the checkout and every header of it they include (also through the manifest's
    `-I` folders); a source missing or outside the checkout is left out: the build stage names it."""
    root = Path(src_dir).resolve()
    dirs = [root, *(root / d for d in map(include_dir, kernel.nvcc_flags + kernel.cxx_flags)
                    if d is not None and not Path(d).is_absolute())]
    files: dict[Path, None] = {}
    for rel in kernel.sources:
        path = (root / rel).resolve()
        if path.is_relative_to(root) and path.is_file():
            files.update(dict.fromkeys([path, *local_includes(path, dirs, root)]))
    return list(files)


def registering_file(kernel: KernelSpec, src_dir: Path) -> str:
    """The first of the kernel's sources and headers that registers torch ops, relative to the checkout ('':
    none). One in a comment, or in a macro never used, counts too: it costs a process, never a wrong figure."""
    root = Path(src_dir).resolve()
    for path in read_files(kernel, root):
        if TORCH_OP_REGISTRATION.search(path.read_bytes()):
            return path.relative_to(root).as_posix()
    return ""


def registers_torch_ops(kernel: KernelSpec, src_dir: Path) -> bool:
    """Whether the kernel's sources or the headers they include register torch ops (`registering_file`)."""
    return bool(registering_file(kernel, src_dir))


def defines_pybind_module(kernel: KernelSpec, src_dir: Path) -> bool:
    """Whether the sources or their headers define a pybind11 module (functions `function` can name)."""
    return any(_PYBIND_FUNCTION.search(path.read_bytes()) for path in read_files(kernel, src_dir))


def defined_module_names(sources: list[str], src_dir: Path) -> set[str]:
    """The module names `sources` define themselves (`PyInit_<name>`, `PYBIND11_MODULE(<name>,`); none: the gate's."""
    names: set[str] = set()
    for rel in sources:
        path = src_dir / rel
        if path.is_file():
            for init, pybind in _DEFINED_NAME.findall(path.read_bytes()):
                names.add((init or pybind).decode())
    return names - {_GATE_CHOOSES}


def derived_name(kernel_name: str) -> str:
    """The module name the gate gives a kernel whose sources leave it open: its manifest name, non-word
    characters as `_`, `k_` before a leading digit (the one start an identifier forbids; `_C` stays `_C`)."""
    name = re.sub(r"\W", "_", kernel_name)
    return f"k_{name}" if name[:1].isdigit() else name


def extension_name(kernel: KernelSpec, src_dir: Path, *, key: str = "") -> str:
    """The Python module name of a kernel's extension (also `TORCH_EXTENSION_NAME`): the manifest's `module`,
    else the one name the sources define, else `derived_name`. A `module` the sources contradict, or two
    names defined, raise `ManifestError` at `key`: the `.so` could not be imported under any single name."""
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
