"""The compilers' command lines for the static and build stages (the gate's flags, torch's include paths
and defines, the manifest's flags last), for the one nvcc `GATE_NVCC_PATH` names; `gate.nvidia.compiler`
finds and runs it. `discover` exports its toolkit as `CUDA_HOME` before torch's `cpp_extension` is
imported, so a workload that JIT-compiles through `torch.utils.cpp_extension.load` uses it too.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gate.compiling import torch_facts
from gate.compiling.build_cache import Toolchain
from gate.errors import ToolMissingError
from gate.nvidia import compiler

# Flags common to every compile. -Xptxas -v: ptxas's register/smem/spill report goes into the log.
# -lineinfo: source lines in the SASS, for Nsight Compute's source view; it does not change the code.
# -fvisibility=hidden (kernel objects) and -Bsymbolic (link): two revisions of one kernel are loaded
# into one process, with equal symbol names; each extension must call its *own* launch function and
# kernel stubs, never the ones of the .so loaded first (seen on the device: every variant ran the
# first-loaded kernel before these flags).
_NVCC_FLAGS = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-Xptxas", "-v", "-lineinfo",
               "-I."]
_CXX_FLAGS = ["-O3", "-fPIC", "-I."]
# Headers a CUDA build of torch generates and a CPU build lacks (`cpu_torch/`), offered after torch's own.
_CPU_TORCH = Path(__file__).parent / "cpu_torch"
_CPU_TORCH_LACKS = "c10/cuda/impl/cuda_cmake_macros.h"


def gate_python_env() -> dict[str, str]:
    """This process's environment with the gate's package root first on PYTHONPATH, for a `-m gate...` child."""
    import gate

    env = dict(os.environ)
    package_root = str(Path(gate.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


def device_arch() -> str:
    """The local GPU's base arch, `sm_90` for compute capability 9.0 (needs torch and a GPU)."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def archs_for_device(manifest_archs: list[str], device: str) -> list[str]:
    """What to compile for a GPU of arch `device`: `sm_90a` when the manifest asks for it, else the base
    arch; `[]` when it lists only other GPUs' arch-specific targets, whose kernels (wgmma) compile for
    no other arch: "cannot run here", not a compile error."""
    if f"{device}a" in manifest_archs:
        return [f"{device}a"]
    if manifest_archs and all(a.endswith("a") for a in manifest_archs):
        return []
    return [device]


def target_archs(manifest_archs: list[str]) -> list[str]:
    """`archs_for_device` for the local GPU; without one, the manifest's list (a CPU machine compiles them)."""
    import torch

    if not torch.cuda.is_available():
        return list(manifest_archs) or ["sm_90"]
    return archs_for_device(manifest_archs, device_arch())


def gencode(arch: str) -> str:
    """`sm_90a` -> `-gencode=arch=compute_90a,code=sm_90a` (the form that assembles wgmma on nvcc 13.0)."""
    num = arch.removeprefix("sm_")
    return f"-gencode=arch=compute_{num},code=sm_{num}"


def plain_nvcc_command(nvcc: str, archs: list[str], extra: list[str] | None = None) -> list[str]:
    """The nvcc command line of a `.cu` that includes no torch header, the manifest's flags last."""
    return [nvcc, *_NVCC_FLAGS, *(gencode(a) for a in archs), *(extra or [])]


@cache
def nvcc_versions(nvcc: str) -> Toolchain:
    """The key versions of a `.cu` object that includes no torch header: nvcc's and its host compiler's."""
    try:
        host = compiler.version([compiler.find_host_compiler(), "--version"]).splitlines()[0]
    except (ToolMissingError, IndexError):
        host = "no host compiler"
    return Toolchain(torch_version="none", cuda_version="none",
                     compiler_version=f"{compiler.version([nvcc, '--version'])}\n{host}")


@dataclass(frozen=True)
class Tools:
    nvcc: str
    cxx: str
    cuda_home: Path
    versions: Toolchain
    torch: torch_facts.TorchFacts       # what torch tells a compile (saved for fresh processes)
    torch_std: str                      # -std=c++17 (torch <= 2.11) or -std=c++20 (newer)
    cuda_includes: tuple[str, ...]      # the toolkit's, then stand-ins for what a CPU torch lacks

    def _torch_flags(self, name: str) -> list[str]:
        py_include = sysconfig.get_paths()["include"]
        return [self.torch_std, *(f"-I{p}" for p in self.torch.includes), f"-I{py_include}",
                *(f"-I{p}" for p in self.cuda_includes), *self.torch.defines,
                f"-DTORCH_EXTENSION_NAME={name}"]

    def nvcc_command(self, archs: list[str], name: str, uses_torch: bool, extra: list[str] | None = None) -> list[str]:
        """nvcc for one `.cu` in a `CUDAExtension`'s order: the manifest's `-U` (last) undoes torch's `-D`."""
        cmd = plain_nvcc_command(self.nvcc, archs)
        if uses_torch:  # torch's own defines (and C++ standard) for .cu files that include its headers
            cmd += [*self.torch.nvcc_flags, *self._torch_flags(name)]
        return cmd + list(extra or [])

    def cxx_command(self, name: str, extra: list[str] | None = None) -> list[str]:
        return [self.cxx, *_CXX_FLAGS, *self._torch_flags(name), *(extra or [])]

    def link_command(self, objects: list[str], output: str) -> list[str]:
        # Objects before libraries: with --as-needed (the default of several distributions) a
        # library named before the objects that use it is dropped.
        libs = [f"-L{p}" for p in self.torch.libs]
        return [self.cxx, "-shared", "-Wl,-Bsymbolic", *objects, "-o", output, *libs, f"-L{self.cuda_home / 'lib64'}",
                "-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-ltorch_python",
                "-lcudart"]


def _torch_std(torch_includes: list[str]) -> str:
    # torch states its minimum standard in ATen.h ("C++20 or later compatible compiler is required").
    for root in torch_includes:
        header = Path(root) / "ATen" / "ATen.h"
        if header.is_file():
            return "-std=c++20" if "C++20" in header.read_text(errors="replace") else "-std=c++17"
    return "-std=c++17"


def _export_cuda_home(cuda_home: Path) -> None:
    # torch.utils.cpp_extension reads CUDA_HOME (before nvcc on PATH) once, when it is imported,
    # and compiles with `$CUDA_HOME/bin/nvcc`.
    os.environ["CUDA_HOME"] = str(cuda_home)


# `discover` answers once per process and facts folder. Both sides' static stages ask at the same
# moment (their threads start together), and `functools.cache` alone lets both miss and run every
# probe twice.
_DISCOVERING = threading.Lock()


def discover(nvcc: str = "nvcc", facts: Path | None = None) -> Tools:
    """Find nvcc, the host compiler and torch (`ToolMissingError` naming what is missing). `facts`: the
    gate's saved torch facts (`torch_facts`), which spare a fresh process its torch import (2 to 5 s,
    which both sides' static stages would wait for)."""
    with _DISCOVERING:
        return _discovered(nvcc, Path(facts).resolve() if facts else None)


@cache
def _discovered(nvcc: str, facts_dir: Path | None) -> Tools:
    nvcc_path = compiler.find_nvcc(nvcc)
    cxx = compiler.find_host_compiler()
    cuda_home = compiler.cuda_home(nvcc_path)
    _export_cuda_home(cuda_home)
    facts = torch_facts.load(facts_dir) if facts_dir else None
    if facts is None:
        try:
            facts = torch_facts.from_torch()
        except ImportError as exc:
            raise ToolMissingError(f"torch is not importable: {exc}") from exc
    versions = Toolchain(
        torch_version=facts.torch_version,
        cuda_version=facts.cuda_version,
        compiler_version=compiler.version([nvcc_path, "--version"]) + "\n"
        + compiler.version([cxx, "--version"]).splitlines()[0]
        + f"\npython {sys.version_info.major}.{sys.version_info.minor}",
    )
    return Tools(
        nvcc=nvcc_path, cxx=cxx, cuda_home=cuda_home, versions=versions, torch=facts,
        torch_std=_torch_std(list(facts.includes)),
        cuda_includes=(*compiler.cuda_includes(cuda_home, facts.torch_file), *_stand_ins(facts)),
    )


def _stand_ins(facts: torch_facts.TorchFacts) -> tuple[str, ...]:
    """The gate's stand-in folder when torch's headers lack what only its CUDA build generates (a CPU torch)."""
    has = any((Path(root) / _CPU_TORCH_LACKS).is_file() for root in facts.includes)
    return () if has else (str(_CPU_TORCH),)
