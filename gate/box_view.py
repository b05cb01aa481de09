"""What a box sees of the host: every mount bwrap makes, each with the reason it is there.

Nothing of the host is there unless a line of `view()` puts it there (bwrap starts from an empty
root); what is not listed is absent: /var, /opt (but a toolchain that lives there), /home, /root,
/srv, /mnt, the gate's checkout, its data folder, every other job. Each mount's `why` is one of
`REASONS`, in the order bwrap applies them; docs/security.md gives each reason's mounts and why, and
tests/security/test_box_view.py holds the two to each other.
"""

from __future__ import annotations

import glob
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import gate
from gate.nvidia import devices, tools

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
SCRATCH_DIRS = ("/tmp", "/var/tmp")
COVERED_DIRS = ("/root", "/home", "/run", "/mnt", "/media", "/srv")
# What of the host's /etc the box sees: the dynamic loader's cache and configuration, the compiler
# alternatives (c++ -> /etc/alternatives/c++), the time zone and the Python site configuration.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "nsswitch.conf",
             "os-release")
REASONS = ("system", "kernel", "etc", "scratch", "cover", "toolchain", "python", "gate-package",
           "job-inputs", "hidden", "job-output", "gpu")


@dataclass(frozen=True)
class Mount:
    how: str        # a bwrap option: --ro-bind, --bind, --dev-bind, --symlink, --tmpfs, --dir, --proc, --dev
    source: str     # what is mounted ("" for --tmpfs, --dir, --proc, --dev; the link text for --symlink)
    target: str     # where, inside the box
    why: str        # one of REASONS
    size: int = 0   # bytes, for a --tmpfs of fixed size
    mode: str = ""  # --perms of a --tmpfs or --dir

    def args(self, sized: bool = True) -> list[str]:
        """bwrap's options for this mount; `sized`: bwrap knows `--size` (0.6 and later)."""
        args = (["--perms", self.mode] if self.mode else []) + (["--size", str(self.size)] if self.size and sized else [])
        if self.how in ("--tmpfs", "--dir", "--proc", "--dev"):
            return [*args, self.how, self.target]
        return [*args, self.how, self.source, self.target]


def _system() -> list[Mount]:
    mounts = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            mounts.append(Mount("--symlink", os.readlink(path), path, "system"))
        elif os.path.isdir(path):
            mounts.append(Mount("--ro-bind", path, path, "system"))
    return mounts


def _is_system(path: Path) -> bool:
    """Visible already: under a system dir, also once symlinks are resolved."""
    return any(p == Path(d) or p.is_relative_to(d) for p in (path, path.resolve()) for d in SYSTEM_DIRS)


def _etc(identity: Path) -> list[Mount]:
    mounts = [Mount("--tmpfs", "", "/etc", "etc")]
    mounts += [Mount("--ro-bind", f"/etc/{name}", f"/etc/{name}", "etc") for name in ETC_FILES
               if os.path.lexists(f"/etc/{name}")]
    mounts += [Mount("--ro-bind", path, path, "etc") for path in sorted(glob.glob("/etc/python3*"))]
    return mounts + [Mount("--ro-bind", str(identity / "passwd"), "/etc/passwd", "etc"),
                     Mount("--ro-bind", str(identity / "group"), "/etc/group", "etc")]


def toolchain_paths(env: dict[str, str]) -> list[Path]:
    """The CUDA toolkit, ncu and the loader's library directories (see the module doc)."""
    found = tools.install_dirs(env.get("PATH", ""))
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(name) or os.environ.get(name):
            found.append(Path(env.get(name) or os.environ[name]))
    conf = [Path(line.strip()) for f in sorted(glob.glob("/etc/ld.so.conf.d/*.conf"))
            for line in Path(f).read_text(errors="replace").splitlines() if line.strip().startswith("/")]
    found += conf + [Path(p) for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p.startswith("/")]
    return [p for p in dict.fromkeys(found) if p.is_dir() and not _is_system(p) and p != Path("/")]


def gate_checkout() -> Path | None:
    """The checkout the gate runs from (a source tree or an editable install), or None when the gate
    is an installed package (its parent folder is then a site-packages, which holds only packages)."""
    root = Path(gate.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").exists() or (root / ".git").exists() else None


def python_paths(env: dict[str, str]) -> list[Path]:
    """The Python installation and the import path, never the gate's checkout or anything in it, nor
    `sys.path[0]` (the directory the gate was started from, or its script's: no installed package)."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, Path(sys.executable).resolve().parent,
             *(sysconfig.get_paths().get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")),
             *site.getsitepackages(), *sys.path[1:], *env.get("PYTHONPATH", "").split(os.pathsep)]
    checkout = gate_checkout()
    found = []
    for raw in filter(None, map(str, paths)):
        path = Path(raw)
        if not path.is_absolute() or not path.exists() or path == Path("/") or _is_system(path):
            continue
        if checkout is not None and (path.resolve() == checkout or path.resolve().is_relative_to(checkout)
                                     and not path.resolve().is_relative_to(checkout / ".venv")):
            continue
        found.append(path)
    return list(dict.fromkeys(found))


def _parents(path: Path) -> list[Mount]:
    """Directories on the way to a bind outside the system dirs, made traversable (bwrap would make
    them 0700 on its own root)."""
    return [Mount("--dir", "", str(parent), "", mode="0755") for parent in reversed(Path(path).parents)
            if parent != Path("/") and not _is_system(parent)]


def _binds(paths: list[Path], how: str, why: str, never: set[Path]) -> list[Mount]:
    mounts = []
    for path in dict.fromkeys(Path(p) for p in paths):
        if path in never or path.resolve() in never or (how == "--ro-bind" and _is_system(path)):
            continue
        mounts += [Mount(m.how, m.source, m.target, why, mode=m.mode) for m in _parents(path)]
        mounts.append(Mount(how, str(path), str(path), why))
    return mounts


def view(*, readable: tuple[Path, ...], writable: tuple[Path, ...], hidden: tuple[Path, ...], gpu: bool | devices.Gpu,
         cwd: Path, env: dict[str, str], identity: Path, tmp_bytes: int) -> list[Mount]:
    """Every mount of a box, in bwrap's order (see the module doc)."""
    hidden = tuple(Path(p).resolve() for p in hidden)
    never = {Path("/"), *map(Path, SCRATCH_DIRS), *map(Path, COVERED_DIRS), *hidden}
    mounts = [*_system(), Mount("--dev", "", "/dev", "kernel"), Mount("--proc", "", "/proc", "kernel"),
              *_etc(identity)]
    mounts += [Mount("--tmpfs", "", path, "scratch", size=tmp_bytes, mode="1777")
               for path in (*SCRATCH_DIRS, "/dev/shm")]
    mounts.append(Mount("--dir", "", "/tmp/home", "scratch", mode="0777"))
    mounts += [Mount("--tmpfs", "", path, "cover", size=1 << 20, mode="0755") for path in COVERED_DIRS]
    mounts += _binds(toolchain_paths(env), "--ro-bind", "toolchain", never)
    mounts += _binds(python_paths(env), "--ro-bind", "python", never)
    mounts += _binds([Path(gate.__file__).resolve().parent], "--ro-bind", "gate-package", never)
    inputs = [Path(cwd), *readable]
    mounts += _binds(inputs, "--ro-bind", "job-inputs", never)
    mounts += [_cover(path, identity) for path in hidden if path.exists() and _bound(path, mounts)]
    # Again, after the covers: a checkout that sits inside a hidden folder (the data folder).
    mounts += _binds([p for p in inputs if any(p.resolve().is_relative_to(h) for h in hidden)], "--ro-bind",
                     "job-inputs", never)
    mounts += _binds(list(writable), "--bind", "job-output", never)
    if gpu:
        mounts += _binds(devices.device_nodes(None if gpu is True else gpu), "--dev-bind", "gpu", never)
    return _tidy(mounts)


def _bound(path: Path, mounts: list[Mount]) -> bool:
    """Whether a bind made so far shows `path` (a place no bind shows is absent already)."""
    return any(m.how.endswith("bind") and path.is_relative_to(m.target) for m in mounts)


def _cover(path: Path, identity: Path) -> Mount:
    """A hidden folder as an empty tmpfs, a hidden file as an empty one (read-only)."""
    return Mount("--tmpfs", "", str(path), "hidden") if path.is_dir() else \
        Mount("--ro-bind", str(identity / "empty"), str(path), "hidden")


def _tidy(mounts: list[Mount]) -> list[Mount]:
    """Without the read-only binds and directories that an earlier read-only bind holds already (a
    site-packages inside its prefix): one mount per place, and no mkdir on a read-only bind. What a
    place shows is its deepest mount: a directory inside a tmpfs that covers part of a bind (the data
    folder inside a bound working directory) is made, with its mode."""
    layers: list[tuple[Path, bool]] = []      # (mount point, a read-only bind), in bwrap's order
    made: set[Path] = set()
    kept = []
    for mount in mounts:
        target = Path(mount.target)
        holders = [(len(p.parts), i, ro) for i, (p, ro) in enumerate(layers) if target == p or target.is_relative_to(p)]
        inside_bind = bool(holders) and max(holders)[2]
        if mount.how == "--dir":
            if inside_bind or target in made:
                continue
            made.add(target)
        elif mount.how.startswith("--ro-bind"):
            if inside_bind and mount.source == mount.target:      # a cover (another source) stays
                continue
            layers.append((target, True))
        elif mount.how in ("--tmpfs", "--bind", "--dev-bind"):    # covers whatever was mounted below it
            layers = [(p, ro) for p, ro in layers if not p.is_relative_to(target)] + [(target, False)]
            made = {d for d in made if not d.is_relative_to(target)}
        kept.append(mount)
    return kept
