"""The box: every compile of submitted code, and the GPU child that runs it, run inside bubblewrap.

`command()` builds the argument list, `popen()`/`run()` run it. What the box gives a command (no
network, its own namespaces and user, a read-only view of the host, limits per process and per box,
an allow-listed environment) is the table of docs/security.md, "The box"; the reasons it does not give:

- a user id leased per box (`gate.box_leases`), not one for every box: RLIMIT_NPROC counts all of a
  user's threads, and a GPU child's torch threads made another job's `vfork` fail;
- RLIMIT_DATA, not RLIMIT_AS: the CUDA driver reserves a very large address space;
- bwrap is the process the caller kills on its timeout; `--die-with-parent` takes its pid namespace.

Why bubblewrap: one small, well-kept binary (Flatpak's sandbox; a Debian package, also carried as a
`.deb` to unpack where nothing can be installed) that does the mount set-up that is easy to get
subtly wrong by hand, as root (hosts that forbid unprivileged user namespaces still box) or as an
ordinary user. nsjail needs protobuf, libnl and a configuration language; our own namespaces
(`os.unshare`) would re-implement bwrap's mount set-up.

Nesting: the box sets `GATE_IN_BOX=1`; a command boxed inside a box (a compile in the GPU child) only
gets the per-process limits, which can be lowered, not raised (not the process count: its user's
count includes the outer box's threads), inside the outer box's cgroup, user and mounts. `Box.cpus`
pins a box to CPU cores (`taskset`). `GATE_BOX=off` runs commands unboxed (with the limits): for
trusted code on a machine without bubblewrap, never for a server that builds other people's code.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from gate import box_leases, box_memory, box_view
from gate.errors import GateError, ToolMissingError
from gate.nvidia.devices import Gpu

GiB = 1 << 30
BOX_ENV = "GATE_IN_BOX"
_SYSTEM_DIRS = {Path("/"), Path("/dev"), Path("/proc"), Path("/sys"), Path("/etc"), Path("/usr")}
# GATE_COMPILE_MEMORY_GIB, no secret: the GPU child's compiles are limited by it, and count the
# host's compile places with it (`nvidia.compiler.compile_slots`) as the parent does.
_ENV_NAMES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
              "LD_LIBRARY_PATH", "GATE_COMPILE_MEMORY_GIB")
_ENV_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_", "TORCH_", "OMP_")


class BoxError(GateError):
    """A box was asked for something it must not do (e.g. write a host directory)."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 8 * GiB       # RLIMIT_DATA: heap and private writable mappings, per process
    cpu_s: int = 1200                 # RLIMIT_CPU, per process
    file_bytes: int = 2 * GiB         # RLIMIT_FSIZE: the largest file one write may make
    processes: int = 512              # RLIMIT_NPROC: processes and threads of the box's user
    box_memory_bytes: int = 16 * GiB  # the memory cgroup: all processes and tmpfs pages together
    tmp_bytes: int = 1 * GiB          # each of /tmp, /var/tmp and /dev/shm (tmpfs)
    disk_bytes: int = 2 * GiB         # the output folder, all files together (the caller watches it)


# A compile: cc1plus with torch's headers peaks near 1.5 GiB, but nvcc's cicc on a CuTe flash
# attention (32 template instances in one .cu) peaked at 9.0 GB, so the default is 16 GiB per process
# (GATE_COMPILE_MEMORY_GIB sets it); `#include "/dev/zero"` still stops at the limit, which the
# static stage then reports as the gate's limit (nvidia.compiler.ToolRun.fault), never cached.
COMPILE_MEMORY_GIB = int(os.environ.get("GATE_COMPILE_MEMORY_GIB", "16"))
COMPILE_LIMITS = Limits(memory_bytes=COMPILE_MEMORY_GIB * GiB, cpu_s=900, file_bytes=1 * GiB, processes=256,
                        box_memory_bytes=(COMPILE_MEMORY_GIB + 2) * GiB, tmp_bytes=1 * GiB, disk_bytes=1 * GiB)
# The GPU child: torch, the workloads' tensors on the host side, ncu and its reports, and the compiles
# it boxes (inside its cgroup and its /tmp). An .ncu-rep of the demo is under 20 MiB.
GPU_CHILD_LIMITS = Limits(memory_bytes=48 * GiB, cpu_s=3600, file_bytes=1 * GiB, processes=2048,
                          box_memory_bytes=48 * GiB, tmp_bytes=4 * GiB, disk_bytes=2 * GiB)


@dataclass(frozen=True)
class Box:
    writable: tuple[Path, ...] = ()     # bound read-write (a job's artifacts, the object cache)
    readable: tuple[Path, ...] = ()     # bound read-only (checkouts, include directories)
    hidden: tuple[Path, ...] = ()       # covered with an empty tmpfs (the gate's data directory)
    gpu: bool | Gpu = False             # bind every GPU's /dev/nvidia* nodes, or one GPU's and the shared ones
    limits: Limits = field(default_factory=Limits)
    cpus: tuple[int, ...] = ()          # the CPU cores its processes run on; (): any


# The server's own files, hidden from every box wherever they lie (issue 44: a data folder under a bound
# import path showed its database to a submitted `#include`). Each command's settings name them
# (`gate.config.get_settings`); `Box.hidden` adds a box's own.
PRIVATE: set[Path] = set()


def keep_private(paths: list[Path]) -> None:
    PRIVATE.update(Path(p).resolve() for p in paths)


def enabled() -> bool:
    return os.environ.get("GATE_BOX", "bwrap") != "off"


def inside() -> bool:
    return os.environ.get(BOX_ENV) == "1"


BOX_UIDS = 64                          # boxes at once on one host, each its own user id
UID_WAIT_S = 60.0


def box_uid() -> int:
    """The first of the boxes' user ids, and their group."""
    return int(os.environ.get("GATE_BOX_UID", "100000"))


def _lease_uid() -> box_leases.Lease | None:
    """A user id of its own for a box about to start (see the module doc); None where the box keeps
    the gate's user (not root, nested, unboxed)."""
    if inside() or not enabled() or os.geteuid() != 0:
        return None
    lease = box_leases.take("box-uids", BOX_UIDS, UID_WAIT_S)
    if lease is None:
        raise BoxError(f"no box user id came free in {UID_WAIT_S:g} s: {BOX_UIDS} boxes run on this host")
    return lease


def _find(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise ToolMissingError(f"{tool} not found: install bubblewrap and util-linux (the box for submitted "
                               "code), or set GATE_BOX=off for trusted repositories only")
    return found


def limit_args(limits: Limits, processes: bool = True) -> list[str]:
    """prlimit's arguments; `processes`: RLIMIT_NPROC too (not where the box's cgroup counts them,
    nor nested: the outer box's user counts the outer box's threads as well)."""
    nproc = [f"--nproc={limits.processes}"] if processes and not inside() else []
    return [_find("prlimit"), f"--data={limits.memory_bytes}", f"--cpu={limits.cpu_s}",
            f"--fsize={limits.file_bytes}", *nproc, "--core=0", "--"]


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a boxed command gets: an allow-list, never the gate's settings or secrets."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": "/tmp/home", "TMPDIR": "/tmp", "USER": "gate", BOX_ENV: "1"})
    return env


@cache
def _identity_files(uid: int, gid: int) -> Path:
    """The box's own `passwd` and `group`, and the empty file that covers a hidden one (one per process and uid)."""
    directory = Path(tempfile.mkdtemp(prefix="gate-box-etc-"))
    (directory / "passwd").write_text(f"gate:x:{uid}:{gid}:gate box:/tmp/home:/usr/sbin/nologin\n")
    (directory / "group").write_text(f"gate:x:{gid}:\n")
    (directory / "empty").write_text("")
    for path in (directory, directory / "passwd", directory / "group", directory / "empty"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return directory


def anchored(box: Box, cwd: Path) -> Box:
    """`box` with relative paths read against the command's `cwd`: bwrap (and a chown) would read them
    against the gate's own working directory, and a bare "." there could cover the box's root."""
    return replace(box, readable=tuple(Path(cwd) / p for p in box.readable),
                   writable=tuple(Path(cwd) / p for p in box.writable),
                   hidden=tuple(Path(cwd) / p for p in box.hidden))


def command(box: Box, argv: list[str], cwd: Path, env: dict[str, str], uid: int | None = None,
            processes: bool = True) -> list[str]:
    """The argument list that runs `argv` in `box`, as `uid` where the gate runs as root (default: the first
    box user id); `processes`: see `limit_args`."""
    limits = limit_args(box.limits, processes)
    pin = [_find("taskset"), "--cpu-list", ",".join(map(str, box.cpus))] if box.cpus else []
    box = anchored(box, cwd)
    if inside() or not enabled():
        return [*pin, *limits, *argv]
    bwrap = _find("bwrap")
    as_root = os.geteuid() == 0
    uid = (box_uid() if uid is None else uid) if as_root else os.geteuid()
    args = [*pin, bwrap, "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "gate-box"]
    if not as_root:
        args += ["--unshare-user"]
    sized = sizes_tmpfs()
    for mount in view(box, cwd, env, uid):
        args += mount.args(sized)
    args += ["--chdir", str(cwd), "--"]
    if as_root:
        args += [_find("setpriv"), f"--reuid={uid}", f"--regid={box_uid()}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs", "--"]
    return [*args, *limits, *argv]


@cache
def sizes_tmpfs() -> bool:
    """Whether this bwrap can cap a tmpfs (`--size`, bubblewrap 0.6 and later); older ones box without
    the cap, and the job's evidence says so."""
    try:
        found = subprocess.run([_find("bwrap"), "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired, ToolMissingError):
        return False
    return "--size" in found.stdout + found.stderr


def view(box: Box, cwd: Path, env: dict[str, str], uid: int | None = None) -> list[box_view.Mount]:
    """Every mount of `box` (`gate.box_view`), for a command in `cwd` with the boxed environment `env`."""
    box = anchored(box, cwd)
    return box_view.view(readable=box.readable, writable=box.writable, hidden=(*box.hidden, *PRIVATE), gpu=box.gpu,
                         cwd=Path(cwd), env=env, identity=_identity_files(box_uid() if uid is None else uid, box_uid()),
                         tmp_bytes=box.limits.tmp_bytes)


# Never handed to the box's user, whatever a caller asks: the host's own directories.
_NEVER_OWNED = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/run", "/sbin",
                "/sys", "/usr", "/var/lib", "/var/log", "/var/run")


def _check_ownable(path: Path) -> None:
    resolved = path.resolve()
    if resolved == Path("/") or os.path.ismount(resolved) or any(
            resolved == Path(p) or resolved.is_relative_to(p) for p in _NEVER_OWNED):
        raise BoxError(f"refusing to give {resolved} to the box's user (a host directory, not a job's)")


def prepare_writable(box: Box, uid: int | None = None) -> None:
    """Let the box's user (`uid`, default the first box user id) write its writable paths where the gate
    runs as root, and their directories its group, which every box shares: a folder several boxes write
    at once (the object cache) stays writable to each (umask 002). A host directory or a mount point
    raises `BoxError`."""
    if not enabled() or inside() or os.geteuid() != 0:
        return
    uid, gid = (box_uid() if uid is None else uid), box_uid()
    for top in box.writable:
        top = Path(top)
        top.mkdir(parents=True, exist_ok=True)
        _check_ownable(top)
        device = top.stat().st_dev
        for path in [top, *top.rglob("*")]:
            try:
                stat = path.lstat()
                if stat.st_dev == device:
                    os.lchown(path, uid, gid)
                    if path.is_dir() and not path.is_symlink():
                        path.chmod(stat.st_mode | 0o070)
            except FileNotFoundError:      # another box renamed its temporary file meanwhile
                continue


class BoxedPopen(subprocess.Popen):
    """A boxed command's process, with the memory cap of its box (`gate.box_memory`) and the lease
    on its user id, both released when it has ended."""

    def __init__(self, args: list[str], memory: box_memory.MemoryCap, uid: box_leases.Lease | None = None,
                 **kwargs) -> None:
        self.memory, self._uid = memory, uid
        try:
            super().__init__([*memory.join, *args], umask=0o002, **kwargs)
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        self.memory.release()
        if self._uid is not None:
            self._uid.release()

    def kill(self) -> None:
        self.memory.kill_all()
        super().kill()

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        self._release()
        return code

    def poll(self) -> int | None:
        code = super().poll()
        if code is not None:
            self._release()
        return code


def memory_cap(box: Box) -> box_memory.MemoryCap:
    """The cap on the whole box's memory; nothing to make inside a box (the outer one's holds) or unboxed."""
    if inside() or not enabled():
        return box_memory.MemoryCap("the enclosing box's" if inside() else "per-process RLIMIT_DATA only (unboxed)")
    tmpfs = (f"tmpfs mounts of {box.limits.tmp_bytes} bytes each" if sizes_tmpfs()
             else "tmpfs mounts without a size cap (this bwrap has no --size)")
    return box_memory.cap(box.limits.box_memory_bytes, box.limits.processes, tmpfs)


def popen(box: Box, argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
          **kwargs) -> BoxedPopen:
    """Start `argv` in `box` (the Popen arguments as usual, but never a shell)."""
    env = environment(env)
    lease = _lease_uid()
    uid = None if lease is None else box_uid() + lease.number
    cap = box_memory.MemoryCap("not made")
    try:
        cap = memory_cap(box)
        full = command(box, argv, Path(cwd), env, uid, processes=not cap.pids)
        prepare_writable(anchored(box, Path(cwd)), uid)
    except BaseException:
        cap.release()
        if lease is not None:
            lease.release()
        raise
    return BoxedPopen(full, cap, lease, cwd=cwd, env=env, **kwargs)


def run(box: Box, argv: list[str], *, cwd: Path, timeout_s: float, env: dict[str, str] | None = None,
        text: bool = True) -> subprocess.CompletedProcess:
    """Run `argv` in `box`, capturing its output; raise `subprocess.TimeoutExpired` past `timeout_s`
    after killing the box, and `BoxError` when bwrap could not set the box up (the gate's fault,
    never the submitted code's: a compile that never ran is no compile error). A command the box's
    memory cgroup killed says so at the end of its stderr."""
    proc = popen(box, argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 stdin=subprocess.DEVNULL, text=text, errors="replace" if text else None,
                 start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    first = (err if isinstance(err, str) else (err or b"").decode(errors="replace")).lstrip()[:500]
    if proc.returncode == 1 and first.startswith("bwrap: ") and enabled() and not inside():
        raise BoxError(f"the box could not be set up: {first.splitlines()[0]}")
    if proc.memory.oom_killed():
        note = f"\nkilled: the box passed its memory cap ({proc.memory.mechanism})\n"
        err = err + (note if isinstance(err, str) else note.encode())
    return subprocess.CompletedProcess(proc.args, returncode(proc.returncode), out, err)


def returncode(code: int) -> int:
    """A boxed command's exit status as subprocess reports it unboxed: bwrap's init's 128 + N (signal N) is -N."""
    if enabled() and not inside() and 128 < code < 128 + 65:
        return 128 - code
    return code


def how_it_ended(code: int) -> str:
    """A process's end in words from its (`returncode`) exit status: "killed by SIGABRT", "exited with code 3"."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def for_compile(argv: list[str], cwd: Path) -> Box:
    """The box of one compiler or linker call: it writes where `-o` points and reads its `-I` and `-L`
    dirs, `cwd`, the input files it names and the compiler's own directory (an object cache or a
    configured GATE_NVCC_PATH may sit under a private directory such as /tmp)."""
    writable, readable = [], [Path(cwd)]
    if Path(argv[0]).is_absolute():
        readable.append(Path(argv[0]).resolve().parent)
    for flag, value in zip(argv, argv[1:]):
        if flag == "-o" and (Path(cwd) / value).parent not in _SYSTEM_DIRS:   # `-o /dev/null` writes nothing
            writable.append((Path(cwd) / value).parent)
        elif flag in ("-I", "-L"):
            readable.append(Path(cwd) / value)
    readable += [Path(cwd) / a[2:] for a in argv if a[:2] in ("-I", "-L") and len(a) > 2]
    outputs = {value for flag, value in zip(argv, argv[1:]) if flag == "-o"}
    readable += [Path(cwd) / a for a in argv[1:]
                 if not a.startswith("-") and a not in outputs and (Path(cwd) / a).is_file()]
    return Box(writable=tuple(dict.fromkeys(writable)),
               readable=tuple(p for p in dict.fromkeys(readable) if p.exists()), limits=COMPILE_LIMITS)
