"""Running the compilers (their command lines: `gate.compiling.toolchain`): found, asked their versions
and run in the box, each run in one of the host's compile places (`compile_slot`). CUDA_HOME is the
toolkit of the nvcc in use, as `nvcc --dryrun` names it, never a guess from PATH: one toolkit's
headers with another's nvcc make objects that fail at load time.

A run the machine ended (`ToolRun.fault`) is tried once more, and then it is the gate's failure,
never the source's, and never cached. A compile past the kernel's own timeout is the kernel's
failure, but not cached either (it depends on the load)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from gate import box, box_leases
from gate.errors import ToolMissingError

# What compilers print when the machine, not the source, stopped them, by the resource (the first
# that matches names it). Memory: nvcc's front end (cicc, cudafe++), gcc, the linker, the box's
# cgroup (`gate.box.run`'s note). Processes: a fork or vfork refused (EAGAIN), as gcc's driver said
# when the box's user ran out of processes ("cannot execute '.../collect2': vfork: Resource
# temporarily unavailable"). Start: a program that could not be executed at all. Disk: ENOSPC, EDQUOT.
_FAULTS = (
    ("memory", re.compile(r"catastrophic error: out of memory|virtual memory exhausted|std::bad_alloc"
                          r"|cannot allocate memory|out of memory allocating|passed its memory cap", re.I)),
    ("processes", re.compile(r"resource temporarily unavailable|\bv?fork\b.*(failed|error)|cannot fork", re.I)),
    ("start", re.compile(r"cannot execute|failed to execute|could not execute|execvp", re.I)),
    ("disk space", re.compile(r"no space left on device|disk quota exceeded", re.I)),
    ("a signal", re.compile(r"died due to signal|killed signal terminated program|internal compiler error: killed",
                            re.I)),
)
RETRY_PAUSE_S = 2.0          # a refused fork or a full disk may pass: the one retry waits this long
SLOT_WAIT_S = 300.0          # a compile waits at most this long for a place, then runs anyway


@dataclass(frozen=True)
class ToolRun:
    ok: bool
    output: str
    timed_out: bool = False      # past the kernel's compile timeout: its failure, but never cached (the load's)
    fault: str = ""              # the resource the machine ran out of (`_FAULTS`, or "a signal"): the gate's

    @property
    def limit(self) -> str:
        """Why the machine, not the source, ended this run ('' when it did not)."""
        if not self.fault:
            return ""
        if self.fault == "memory":
            return (f"the compiler ran out of the memory the gate allows one compile ({box.COMPILE_MEMORY_GIB} GiB "
                    "per process; GATE_COMPILE_MEMORY_GIB raises it): the gate's limit, not a fault of the source")
        said = next((line.strip() for line in self.output.splitlines() if _FAULT_WORDS.search(line)), "")
        what = {"processes": "could not start a process (fork refused: the box's or the host's process limit)",
                "start": "could not be started", "disk space": "ran out of disk space",
                "a signal": "was killed by a signal"}[self.fault]
        return f"the compiler {what}, twice: {said[:200] or 'no words'}; the machine's fault, not the source's"


_FAULT_WORDS = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern in _FAULTS) + r"|killed by", re.I)


def fault(returncode: int, output: str) -> str:
    """The resource a failed run lacked, by its words or its end ('' for an ordinary failure: the
    compiler's diagnostic about the source). The box's memory cgroup says when its SIGKILL was its."""
    if returncode == 0:
        return ""
    return next((name for name, pattern in _FAULTS if pattern.search(output)), "a signal" if returncode < 0 else "")


def compile_slots() -> int:
    """Compiles at once on this host: one per core, as many as its memory holds at the per-compile limit."""
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / box.GiB
    return max(1, min(os.cpu_count() or 1, int(memory_gib // box.COMPILE_MEMORY_GIB)))


def slot_folder() -> Path:
    """The folder of the host's compile places, which the GPU child's box binds read-only."""
    return box_leases.folder("compile-slots", compile_slots())


@contextlib.contextmanager
def compile_slot() -> Iterator[None]:
    """One of the host's compile places for the block, waited for at most `SLOT_WAIT_S`: a holder
    frees it within a compile's timeout, and a wait past the bound runs anyway, so no job starves."""
    lease = box_leases.take("compile-slots", compile_slots(), SLOT_WAIT_S)
    try:
        yield
    finally:
        if lease is not None:
            lease.release()


def run_tool(command: list[str], cwd: Path, timeout_s: float) -> ToolRun:
    """Run a compiler (an argument list) in the box, in a compile place; a run the machine ended runs twice."""
    with compile_slot():
        run = _run_once(command, cwd, timeout_s)
        if run.fault:
            time.sleep(RETRY_PAUSE_S)
            again = _run_once(command, cwd, timeout_s)
            run = again if not again.fault else replace(again, output=f"{run.output}\n(tried again:)\n{again.output}")
    return run


def _run_once(command: list[str], cwd: Path, timeout_s: float) -> ToolRun:
    try:
        proc = box.run(box.for_compile(command, cwd), command, cwd=cwd, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        return ToolRun(False, f"{command[0]}: timed out after {timeout_s:.0f} s", timed_out=True)
    except OSError as exc:      # the box's own launcher could not start (EAGAIN, ENOMEM, ENOSPC)
        return ToolRun(False, f"{command[0]}: {exc}", fault=fault(-1, str(exc)) or "start")
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode < 0:
        output += f"\n{command[0]}: {box.how_it_ended(proc.returncode)}"
    return ToolRun(proc.returncode == 0, output, fault=fault(proc.returncode, output))


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
    """The toolkit's include folders for a compile with torch's CUDA headers, which include the CUDA
    libraries' (cusparse.h, cublas_v2.h, ...): where a minimal toolkit lacks them, the library wheels
    torch runs on (beside `torch_file`'s package) carry the matching ones, after the toolkit's own."""
    dirs = [str(home / "include")]
    if not (home / "include" / "cusparse.h").is_file():
        site = Path(torch_file).resolve().parent.parent / "nvidia"
        dirs += sorted(str(p) for p in site.glob("*/include") if not p.parent.name.startswith("cuda_"))
    return dirs
