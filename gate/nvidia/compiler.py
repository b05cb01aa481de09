"""Running the compilers: the compile interface of the static and build stages, whose command lines
`gate.compiling.toolchain` composes. nvcc and the host compiler are found, asked their versions and
run here, in the box with the gate's compile limits; `ToolRun.limit` says when the gate, not the
source, ended a run (never cached as the source's failure). CUDA_HOME is the toolkit of the nvcc in
use, as `nvcc --dryrun` names it (even through wrapper scripts), never a guess from PATH: one
toolkit's headers with another's nvcc make objects that fail at load time."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gate import box
from gate.errors import ToolMissingError

# What compilers print when an allocation fails: nvcc's front end (cicc, cudafe++), gcc, the linker.
_OUT_OF_MEMORY = re.compile(r"catastrophic error: out of memory|virtual memory exhausted|std::bad_alloc"
                            r"|cannot allocate memory|Killed signal terminated program|out of memory allocating")


@dataclass(frozen=True)
class ToolRun:
    ok: bool
    output: str
    timed_out: bool = False      # a fact about the machine's load, not the source: never cached
    out_of_memory: bool = False  # stopped at the gate's compile memory limit: never cached either

    @property
    def limit(self) -> str:
        """Why the gate, not the source, ended this run ('' when it did not)."""
        if self.out_of_memory:
            return (f"the compiler ran out of the memory the gate allows one compile ({box.COMPILE_MEMORY_GIB} GiB "
                    "per process; GATE_COMPILE_MEMORY_GIB raises it): the gate's limit, not a fault of the source")
        return ""


def run_tool(command: list[str], cwd: Path, timeout_s: float) -> ToolRun:
    """Run a compiler (argument list, never a shell string) in the box; a timeout is a failed run."""
    try:
        proc = box.run(box.for_compile(command, cwd), command, cwd=cwd, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        return ToolRun(False, f"{command[0]}: timed out after {timeout_s:.0f} s", timed_out=True)
    output = (proc.stdout + proc.stderr).strip()
    # SIGKILL: the box's memory cgroup ended it (the box runs the compiler as a child: -9 or 128 + 9)
    oom = proc.returncode != 0 and (bool(_OUT_OF_MEMORY.search(output)) or proc.returncode in (-9, 137))
    return ToolRun(proc.returncode == 0, output, out_of_memory=oom)


def find_nvcc(nvcc: str) -> str:
    """The absolute path of `nvcc` (a name on PATH or a path); `ToolMissingError` when absent."""
    found = shutil.which(nvcc)
    if found is None:
        raise ToolMissingError(f"nvcc not found: {nvcc!r} (set GATE_NVCC_PATH or put nvcc on PATH)")
    return found


def find_host_compiler() -> str:
    """The C++ compiler on PATH (`c++`, else `g++`); `ToolMissingError` when there is none."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        raise ToolMissingError("no host C++ compiler (c++ / g++) on PATH")
    return cxx


def version(command: list[str]) -> str:
    """What `command` (a `--version` question) prints; `ToolMissingError` when it cannot answer."""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissingError(f"{command[0]}: {exc}") from exc
    if out.returncode != 0:
        raise ToolMissingError(f"{' '.join(command)} exited {out.returncode}: {out.stderr.strip()}")
    return out.stdout.strip()


def cuda_home(nvcc: str) -> Path:
    """The toolkit of `nvcc` (an absolute path), as `nvcc --dryrun` names its `bin` directory."""
    probe = subprocess.run([nvcc, "--dryrun", "-E", "-x", "cu", "/dev/null"], capture_output=True,
                           text=True, timeout=60)
    for line in (probe.stdout + probe.stderr).splitlines():
        if line.startswith("#$ _HERE_="):
            return Path(line.split("=", 1)[1].strip()).parent
    return Path(shutil.which(nvcc) or nvcc).resolve().parent.parent


def cuda_includes(home: Path, torch_file: str) -> list[str]:
    """The toolkit's include folders for a compile with torch's CUDA headers. Those include the CUDA
    libraries' headers (`ATen/cuda/CUDAContextLight.h`: cusparse.h, cublas_v2.h, cublasLt.h,
    cusolverDn.h); a minimal toolkit may lack them, and the CUDA library wheels torch itself runs on
    (beside `torch_file`'s package, one folder per library) carry the matching ones: each library's,
    after the toolkit's own (whose runtime headers come first; the wheels' `cuda_*` are left out)."""
    dirs = [str(home / "include")]
    if not (home / "include" / "cusparse.h").is_file():
        site = Path(torch_file).resolve().parent.parent / "nvidia"
        dirs += sorted(str(p) for p in site.glob("*/include") if not p.parent.name.startswith("cuda_"))
    return dirs
