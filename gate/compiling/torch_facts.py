"""What torch tells a compile, kept on disk so that a fresh GPU child need not import torch to start one.

Reading them means importing torch, 2 to 5 s, which a cold job's binding compile (10 to 15 s) waited
for (docs/measurements.md). The gate writes them with the precompiled headers, outside any box, with a
fingerprint of where they came from; a job's child sees them read-only (no submission can change
them) and uses them only while the fingerprint holds. The command lines are the same either way
(tests/compiling/test_torch_facts.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from gate.compiling.build_cache import write_atomic

FILE_NAME = "torch-facts.json"
LAYOUT = 1                    # bump when the fields or the fingerprint change
# torch's files the facts come from, relative to its package folder: a reinstall changes their times.
_SOURCES = ("__init__.py", "version.py", "utils/cpp_extension.py")


@dataclass(frozen=True)
class TorchFacts:
    torch_version: str
    cuda_version: str                # the CUDA torch was built with ("None" for a CPU build)
    torch_file: str                  # torch/__init__.py: where the CUDA library wheels lie beside it
    includes: tuple[str, ...]        # cpp_extension.include_paths()
    libs: tuple[str, ...]            # cpp_extension.library_paths()
    defines: tuple[str, ...]         # the extension API, the C++ ABI and pybind11's ABI flags
    nvcc_flags: tuple[str, ...]      # cpp_extension.COMMON_NVCC_FLAGS


def from_torch() -> TorchFacts:
    """The facts, from torch itself (imports it; `CUDA_HOME` must be set first: `toolchain`)."""
    import warnings

    import torch
    import torch.utils.cpp_extension as ext

    with warnings.catch_warnings():  # torch >= 2.9 warns that these flags are internal to pybind11
        warnings.simplefilter("ignore")
        pybind_flags = list(getattr(ext, "_get_pybind11_abi_build_flags", list)())
    defines = ("-DTORCH_API_INCLUDE_EXTENSION_H",
               f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", *pybind_flags)
    return TorchFacts(torch_version=torch.__version__, cuda_version=str(torch.version.cuda),
                      torch_file=torch.__file__, includes=tuple(ext.include_paths(device_type="cpu")),
                      libs=tuple(ext.library_paths(device_type="cpu")), defines=defines,
                      nvcc_flags=tuple(ext.COMMON_NVCC_FLAGS))


def fingerprint() -> dict | None:
    """Where torch's facts would come from here, found without importing torch; None if not found."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(list(spec.submodule_search_locations)[0])
    files = [package / rel for rel in _SOURCES] + sorted(package.glob("_C.*.so")) + sorted(package.glob("_C.so"))
    stats = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            return None
        stats.append([str(path), st.st_size, st.st_mtime_ns])
    return {"layout": LAYOUT, "python": sys.executable, "python_version": sys.version, "files": stats}


def save(root: Path, facts: TorchFacts) -> None:
    """Write `facts` with this process's fingerprint to `root`, atomically (a reader sees all or none)."""
    found = fingerprint()
    if found is None:
        return
    write_atomic(Path(root) / FILE_NAME, json.dumps({"fingerprint": found, "facts": asdict(facts)}, indent=1))


def load(root: Path) -> TorchFacts | None:
    """The facts saved in `root`, when their fingerprint is what this process sees now; else None."""
    try:
        saved = json.loads((Path(root) / FILE_NAME).read_text())
        if saved["fingerprint"] != fingerprint():
            return None
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in saved["facts"].items()}
        if not all(isinstance(v, str) or all(isinstance(x, str) for x in v) for v in fields.values()):
            return None
        return TorchFacts(**fields)
    except (OSError, ValueError, KeyError, TypeError):
        return None
