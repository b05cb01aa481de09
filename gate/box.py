"""The box: every compile of submitted code, and the GPU child that runs it, run inside bubblewrap.

What the box gives a command (`command()` builds the argument list, `run()` runs it):

- no network (a new network namespace holds only a loopback that is down), its own pid, IPC and UTS
  namespaces, a new session (no terminal to inject into), killed with its parent;
- an unprivileged user: when the gate runs as root, bwrap sets up the namespaces as root and
  `setpriv` drops to `GATE_BOX_UID` (default 65534, `nobody`) with no capabilities, no groups and
  `no_new_privs` before the command starts; when the gate runs as another user, bwrap makes a user
  namespace and the command keeps that (already unprivileged) user;
- a read-only view of the host: each top-level directory is bound read-only into bwrap's own root
  (not `/` whole: bwrap would then make mount points on the read-only host, which failed with EROFS
  on the GPU machine), except where the host keeps private things (`/etc` is rebuilt from the few files a loader and a compiler read, with a `passwd` and
  `group` of the box's own; `/root`, `/home`, `/tmp`, `/run`, `/var/tmp`, `/mnt`, `/media`, `/srv`
  and every path in `Box.hidden`, such as the gate's data directory with its database, mirrors and
  other jobs, become empty tmpfs), then the paths the command needs and a cover hid are bound back:
  the Python installation and `PYTHONPATH` entries and `Box.readable` read-only, `Box.writable`
  read-write;
  `/tmp` and `$HOME` are a private tmpfs. `#include "/etc/passwd"` therefore reads the box's passwd,
  never the host's, and nothing under `/root` or the data directory is there to include;
- a minimal `/dev` (null, zero, random, tty, shm); with `Box.gpu`, the host's `/dev/nvidia*` nodes;
- limits (`prlimit`, set inside the box after the namespaces exist): private writable memory
  (RLIMIT_DATA; not RLIMIT_AS, because the CUDA driver reserves a very large address space that
  RLIMIT_AS would refuse), CPU seconds, file size, processes; the wall time is the caller's timeout,
  after which the whole box is killed (bwrap is the process the caller kills; `--die-with-parent`
  takes its pid namespace down with it);
- a clean environment: only `PATH`, locale, `PYTHONPATH` and the CUDA/NVIDIA/torch variables pass;
  no `GATE_*` secret (database URL, GitHub tokens) reaches submitted code.

Why bubblewrap: it is small (one ~50 KB binary, a Debian/Ubuntu package, also carried as a `.deb`
and unpacked where nothing can be installed), well kept (Flatpak's sandbox), and does the mount
namespace set-up (recursive read-only binds, tmpfs covers, a fresh /proc and /dev) that is easy to get
subtly wrong by hand; it works both as root (no user namespace needed, so hosts that forbid
unprivileged user namespaces still box) and as an ordinary user. nsjail has rlimits and cgroups built
in but needs protobuf and libnl at run time and a configuration language; namespaces plus rlimits in
our own code (Python 3.12's `os.unshare`) would mean re-implementing bwrap's mount set-up. Limits are
rlimits, not cgroups, because cgroup delegation differs between hosts and containers.

Nesting: the box sets `GATE_IN_BOX=1`; a command boxed from inside a box (a compile inside the GPU
child) only gets the limits, which can be lowered but not raised. `GATE_BOX=off` runs commands
unboxed (with the limits): for trusted code on a machine without bubblewrap, never for a server
that builds other people's repositories.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from gate.errors import GateError, ToolMissingError

GiB = 1 << 30
BOX_ENV = "GATE_IN_BOX"
# Host directories that are covered with an empty tmpfs: where a host keeps users' and services' files.
PRIVATE_DIRS = ("/root", "/home", "/tmp", "/var/tmp", "/run", "/mnt", "/media", "/srv")
# What of the host's /etc the box sees: the dynamic loader's cache and configuration, the compiler
# alternatives (c++ -> /etc/alternatives/c++), the time zone and the Python site configuration.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
             "os-release")
_SYSTEM_DIRS = {Path("/"), Path("/dev"), Path("/proc"), Path("/sys"), Path("/etc"), Path("/usr")}
_ENV_NAMES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
              "LD_LIBRARY_PATH")
_ENV_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_", "TORCH_", "OMP_")


class BoxError(GateError):
    """A box was asked for something it must not do (e.g. write a host directory)."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 8 * GiB    # RLIMIT_DATA: heap and private writable mappings, per process
    cpu_s: int = 1200              # RLIMIT_CPU, per process
    file_bytes: int = 2 * GiB      # RLIMIT_FSIZE: the largest file one write may make
    processes: int = 512           # RLIMIT_NPROC: processes and threads of the box's user


# A compile: cc1plus with torch's headers peaks near 1.5 GiB; `#include "/dev/zero"` stops at the limit.
COMPILE_LIMITS = Limits(memory_bytes=6 * GiB, cpu_s=900, file_bytes=1 * GiB, processes=256)
# The GPU child: torch, the workloads' tensors on the host side, ncu and its reports.
GPU_CHILD_LIMITS = Limits(memory_bytes=48 * GiB, cpu_s=3600, file_bytes=4 * GiB, processes=2048)


@dataclass(frozen=True)
class Box:
    writable: tuple[Path, ...] = ()     # bound read-write (a job's artifacts, the object cache)
    readable: tuple[Path, ...] = ()     # bound read-only (checkouts, include directories)
    hidden: tuple[Path, ...] = ()       # covered with an empty tmpfs (the gate's data directory)
    gpu: bool = False                   # bind the host's /dev/nvidia* nodes
    limits: Limits = field(default_factory=Limits)


def enabled() -> bool:
    return os.environ.get("GATE_BOX", "bwrap") != "off"


def inside() -> bool:
    return os.environ.get(BOX_ENV) == "1"


def box_uid() -> int:
    return int(os.environ.get("GATE_BOX_UID", "65534"))


def _find(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise ToolMissingError(f"{tool} not found: install bubblewrap and util-linux (the box for submitted "
                               "code), or set GATE_BOX=off for trusted repositories only")
    return found


def limit_args(limits: Limits) -> list[str]:
    prlimit = _find("prlimit")
    return [prlimit, f"--data={limits.memory_bytes}", f"--cpu={limits.cpu_s}",
            f"--fsize={limits.file_bytes}", f"--nproc={limits.processes}", "--core=0", "--"]


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a boxed command gets: an allow-list, never the gate's settings or secrets."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"HOME": "/tmp/home", "TMPDIR": "/tmp", "USER": "gate", BOX_ENV: "1"})
    return env


def _python_paths(env: dict[str, str]) -> list[Path]:
    """The Python installation and import path, bound back where a private dir covered them."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(sys.executable).parent),
             *sys.path, *env.get("PYTHONPATH", "").split(os.pathsep)]
    return [Path(p) for p in dict.fromkeys(filter(None, paths)) if Path(p).exists()]


@cache
def _identity_files(uid: int) -> Path:
    """A directory holding the box's own `passwd` and `group` (one per process and uid)."""
    directory = Path(tempfile.mkdtemp(prefix="gate-box-etc-"))
    (directory / "passwd").write_text(f"gate:x:{uid}:{uid}:gate box:/tmp/home:/usr/sbin/nologin\n")
    (directory / "group").write_text(f"gate:x:{uid}:\n")
    for path in (directory, directory / "passwd", directory / "group"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return directory


def _etc(uid: int) -> list[str]:
    args = ["--tmpfs", "/etc"]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in sorted(glob.glob("/etc/python3*")):
        args += ["--ro-bind", path, path]
    identity = _identity_files(uid)
    return args + ["--ro-bind", str(identity / "passwd"), "/etc/passwd",
                   "--ro-bind", str(identity / "group"), "/etc/group"]


def anchored(box: Box, cwd: Path) -> Box:
    """`box` with relative paths read against the command's `cwd`: bwrap (and a chown) would read them
    against the gate's own working directory, and a bare "." there could cover the box's root."""
    return replace(box, readable=tuple(Path(cwd) / p for p in box.readable),
                   writable=tuple(Path(cwd) / p for p in box.writable),
                   hidden=tuple(Path(cwd) / p for p in box.hidden))


def command(box: Box, argv: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """The argument list that runs `argv` in `box` (see the module doc)."""
    limits = limit_args(box.limits)
    box = anchored(box, cwd)
    if inside() or not enabled():
        return [*limits, *argv]
    bwrap = _find("bwrap")
    as_root = os.geteuid() == 0
    uid = box_uid() if as_root else os.geteuid()
    etc_args = _etc(uid)
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "gate-box"]
    if not as_root:
        args += ["--unshare-user"]
    args += [*_host_view(), "--dev", "/dev", "--proc", "/proc", *etc_args]
    for private in PRIVATE_DIRS:
        if Path(private).is_dir():
            args += ["--perms", "1777" if "tmp" in private else "0755", "--tmpfs", private]
    args += ["--perms", "0777", "--dir", "/tmp/home"]
    covered = [Path(p) for p in PRIVATE_DIRS] + [Path(p).resolve() for p in box.hidden]
    for path in _bindable([*_python_paths(env), *box.readable, Path(cwd)], covered, only_covered=True):
        args += [*_parents(path, covered), "--ro-bind-try", str(path), str(path)]
    for path in box.hidden:
        args += ["--tmpfs", str(Path(path).resolve())]
    for path in _bindable(box.readable, covered, only_covered=True):   # again, if a hidden dir holds one
        args += [*_parents(path, covered), "--ro-bind", str(path), str(path)]
    for path in _bindable(box.writable, covered):
        args += [*_parents(path, covered), "--bind", str(path), str(path)]
    if box.gpu:
        for node in sorted(glob.glob("/dev/nvidia*")):
            args += ["--dev-bind", node, node]
    args += ["--chdir", str(cwd), "--"]
    if as_root:
        args += [_find("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs", "--"]
    return [*args, *limits, *argv]


def _host_view() -> list[str]:
    """The host, read-only: each top-level directory bound on its own into bwrap's fresh root (a
    symlink such as /bin -> usr/bin copied as a symlink). Binding `/` whole made bwrap create the
    mount points of later binds on the read-only host, which failed (EROFS) on the GPU machine."""
    args: list[str] = []
    for entry in sorted(os.listdir("/")):
        path = f"/{entry}"
        if entry in ("proc", "dev", "etc") or path in PRIVATE_DIRS:
            continue
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _bindable(paths: list[Path], covered: list[Path], *, only_covered: bool = False) -> list[Path]:
    """Paths bound into the view: never `/` or a covered directory itself (binding one would undo
    the cover: `cwd=/` re-bound the whole host, /root and a no-device /dev included). With
    `only_covered`, only those a cover hides: the rest is visible (read-only) already."""
    never = {Path("/"), *covered}
    found = []
    for path in dict.fromkeys(Path(p) for p in paths):
        if path in never or path.resolve() in never:
            continue
        if only_covered and not any(path.is_relative_to(root) or path.resolve().is_relative_to(root)
                                    for root in covered):
            continue
        found.append(path)
    return found


def _parents(path: Path, covered: list[Path]) -> list[str]:
    """Directories on the way to a bind inside a covered (tmpfs) directory, made traversable (bwrap
    would make them 0700). Parents on the read-only host exist already and are left alone: mkdir
    there fails with EROFS on some file systems."""
    args: list[str] = []
    for parent in reversed(Path(path).parents):
        if any(parent != root and parent.is_relative_to(root) for root in covered):
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


# Never handed to the box's user, whatever a caller asks: the host's own directories.
_NEVER_OWNED = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/run", "/sbin",
                "/sys", "/usr", "/var/lib", "/var/log", "/var/run")


def _check_ownable(path: Path) -> None:
    resolved = path.resolve()
    if resolved == Path("/") or os.path.ismount(resolved) or any(
            resolved == Path(p) or resolved.is_relative_to(p) for p in _NEVER_OWNED):
        raise BoxError(f"refusing to give {resolved} to the box's user (a host directory, not a job's)")


def prepare_writable(box: Box) -> None:
    """Let the box's user write its writable paths (when the gate runs as root and drops to it).
    Only plain directories of a job qualify: a host directory or a mount point raises `BoxError`."""
    if not enabled() or inside() or os.geteuid() != 0:
        return
    uid = box_uid()
    for top in box.writable:
        top = Path(top)
        top.mkdir(parents=True, exist_ok=True)
        _check_ownable(top)
        device = top.stat().st_dev
        for path in [top, *top.rglob("*")]:
            if path.lstat().st_dev == device:
                os.lchown(path, uid, uid)


def popen(box: Box, argv: list[str], *, cwd: Path, env: dict[str, str] | None = None,
          **kwargs) -> subprocess.Popen:
    """Start `argv` in `box` (the Popen arguments as usual, but never a shell)."""
    env = environment(env)
    full = command(box, argv, Path(cwd), env)
    prepare_writable(anchored(box, Path(cwd)))
    return subprocess.Popen(full, cwd=cwd, env=env, **kwargs)


def run(box: Box, argv: list[str], *, cwd: Path, timeout_s: float, env: dict[str, str] | None = None,
        text: bool = True) -> subprocess.CompletedProcess:
    """Run `argv` in `box`, capturing its output; raise `subprocess.TimeoutExpired` past `timeout_s`
    after killing the box, and `BoxError` when bwrap could not set the box up (the gate's fault,
    never the submitted code's: a compile that never ran is no compile error)."""
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
    return subprocess.CompletedProcess(proc.args, returncode(proc.returncode), out, err)


def returncode(code: int) -> int:
    """A boxed command's exit status as subprocess reports an unboxed one: bwrap's init exits with
    128 + N when the command was killed by signal N, which becomes -N."""
    if enabled() and not inside() and 128 < code < 128 + 65:
        return 128 - code
    return code


def for_compile(argv: list[str], cwd: Path) -> Box:
    """The box of one compiler or linker call: it writes where `-o` points, reads its `-I` and `-L`
    dirs, the input files it names (a link reads objects from the object cache, which may sit under a
    private directory such as /tmp), `cwd` and the compiler's own directory (a configured
    GATE_NVCC_PATH may sit under a private directory)."""
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
