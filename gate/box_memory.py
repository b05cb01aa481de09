"""The memory cap of a whole box: every process in it and every page of its tmpfs mounts together.

Per-process rlimits let one job take many times its limit (several processes, and tmpfs pages, which
no rlimit counts: one job took +8.2 GiB). A memory cgroup counts both. `cap(limits)` makes one per
box, the first mechanism the host allows (docs/security.md, "Memory: which mechanism applies"):
cgroup v2 as a sibling of the gate's own cgroup (a cgroup with processes cannot enable controllers
for its children), cgroup v1's memory hierarchy as a child of the gate's, or none.

The command joins the cgroup itself before it execs bwrap (`MemoryCap.join`, run with `-I -S`): Popen
cannot start a process inside a cgroup, and moving it later leaves what it forked meanwhile outside.
`MemoryCap.mechanism` is what the job's evidence shows.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")
# Writes "0" (the writing process) into the cgroup's procs file, then becomes the command. A join
# that fails says so the way bwrap reports a box it could not set up (`gate.box.run` raises BoxError:
# the gate's fault, never a compile error), and the command does not run outside its cap.
_JOIN = ("import os, sys\ntry:\n    fd = os.open(sys.argv[1], os.O_WRONLY)\n    os.write(fd, b'0')\n"
         "    os.close(fd)\nexcept OSError as exc:\n"
         "    sys.exit(f'bwrap: (gate) could not join the box memory cgroup {sys.argv[1]}: {exc}')\n"
         "os.execvp(sys.argv[2], sys.argv[2:])\n")
PROBE_TIMEOUT_S = 10


@dataclass
class MemoryCap:
    mechanism: str                 # what bounds the box's memory, in words for the job's evidence
    folder: Path | None = None     # the box's cgroup; None: no cgroup
    version: int = 0               # 2, 1, or 0 (no cgroup)
    killed: bool = False           # the kernel killed a process of the box for passing the cap
    pids: bool = False             # the cgroup bounds the box's processes too (`pids.max`)

    @property
    def join(self) -> list[str]:
        """The argument list put before a command so that it runs inside the cgroup."""
        if self.folder is None:
            return []
        return [sys.executable, "-I", "-S", "-c", _JOIN, str(self.folder / "cgroup.procs")]

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the box for passing the cap (so far; after
        `release`, what it was at the end)."""
        if self.folder is None or not self.folder.exists():
            return self.killed
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            fields = dict(line.split() for line in (self.folder / name).read_text().splitlines() if " " in line)
        except OSError:
            return False
        return int(fields.get("oom_kill", "0")) > 0

    def kill_all(self) -> None:
        """SIGKILL every process in the box's cgroup now (the box's own session and pid namespace
        are out of reach of the caller's process-group kill, and die only once bwrap is gone)."""
        if self.folder is None:
            return
        if self.version == 2 and _write(self.folder, "cgroup.kill", 1):
            return
        try:
            pids = (self.folder / "cgroup.procs").read_text().split()
        except OSError:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
                os.kill(int(pid), signal.SIGKILL)

    def release(self) -> None:
        """Remove the cgroup (its processes die with the box's bwrap), keeping whether it killed one."""
        if self.folder is None or not self.folder.exists():
            return
        self.killed = self.oom_killed()
        for _ in range(50):
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    return
                time.sleep(0.02)


def _own(controller: str | None) -> Path | None:
    """The gate's own cgroup path: v2 (`controller` None) or the v1 hierarchy holding `controller`."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if (controller is None and _id == "0" and controllers == "") or (
                controller is not None and controller in controllers.split(",")):
            return Path(path.lstrip("/"))
    return None


def _write(folder: Path, name: str, value: int | str) -> bool:
    try:
        (folder / name).write_text(str(value))
        return True
    except OSError:
        return False


def _made(parent: Path, limit_file: str, memory_bytes: int) -> Path | None:
    """A new box cgroup under `parent` with its memory limit written; None (and no folder) where either fails."""
    folder = parent / f"gate-box-{uuid.uuid4().hex[:12]}"
    try:
        folder.mkdir()
    except OSError:
        return None
    if not _write(folder, limit_file, memory_bytes):
        folder.rmdir()
        return None
    return folder


def _v2(memory_bytes: int, processes: int) -> MemoryCap | None:
    own = _own(None)
    if own is None or not (CGROUP_FS / "cgroup.controllers").is_file():
        return None
    base = CGROUP_FS / own
    base = base.parent if own != Path(".") and own != Path("") else base
    try:
        enabled = (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return None
    folder = _made(base, "memory.max", memory_bytes) if "memory" in enabled else None
    if folder is None:
        return None
    _write(folder, "memory.swap.max", 0)
    pids = "pids" in enabled and _write(folder, "pids.max", processes)
    return MemoryCap(f"cgroup v2: memory.max {memory_bytes} bytes for all its processes and tmpfs pages"
                     + (f", pids.max {processes}" if pids else ""), folder, 2, pids=pids)


def _v1(memory_bytes: int) -> MemoryCap | None:
    own = _own("memory")
    hierarchy = CGROUP_FS / "memory"
    if own is None or not (hierarchy / "memory.limit_in_bytes").is_file():
        return None
    folder = _made(hierarchy / own, "memory.limit_in_bytes", memory_bytes)
    if folder is None:
        return None
    swap = _write(folder, "memory.memsw.limit_in_bytes", memory_bytes)
    return MemoryCap(f"cgroup v1: memory.limit_in_bytes {memory_bytes} bytes for all its processes and "
                     f"tmpfs pages{', swap included' if swap else ''}", folder, 1)


def _joinable(made: MemoryCap) -> bool:
    """Whether a process can join the cgroup (a delegated or nested host may let the gate make one
    but not move processes into it): tried once with `true`, before any box relies on it."""
    try:
        probe = subprocess.run([*made.join, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def cap(memory_bytes: int, processes: int, tmpfs_note: str) -> MemoryCap:
    """A memory cgroup of `memory_bytes` for one box (see the module doc); `tmpfs_note` says what
    bounds its memory when no cgroup can be made."""
    if os.environ.get("GATE_BOX_CGROUP", "auto") != "off":
        for make in (lambda: _v2(memory_bytes, processes), lambda: _v1(memory_bytes)):
            made = make()
            if made is not None and _joinable(made):
                return made
            if made is not None:
                made.release()
    return MemoryCap(f"no memory cgroup on this host: per-process RLIMIT_DATA and {tmpfs_note}")
