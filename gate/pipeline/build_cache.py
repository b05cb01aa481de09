"""Content-addressed cache of compiled objects (`.o`), the core of `build.py`.

An object's key is the sha256 of everything that can change the bytes the compiler writes:
the source, every local header it reaches through `#include "..."` (recursively), the exact
compiler command line (flags, defines, include paths, target arch) and the versions of torch,
the CUDA toolkit and the compiler. Equal keys mean equal objects, so two revisions that differ
only in a kernel `.cu` share the binding's object, and a job on another worktree of the same repo
reuses what an earlier job compiled.

Entries are written to a temporary name and renamed into place, so concurrent jobs sharing one
cache directory never read half-written objects (rename is atomic within a filesystem).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

_LOCAL_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class Toolchain:
    """Versions that enter every object key."""

    torch_version: str
    cuda_version: str
    compiler_version: str          # `nvcc --version` or `c++ --version`, first lines


def local_includes(source: Path, include_dirs: list[Path], root: Path) -> list[Path]:
    """Every file reached from `source` through `#include "..."`, in a stable order.

    Quoted includes are looked up next to the including file, then in `include_dirs`, as the
    compilers do. Files outside `root` (system or torch headers) are not followed: the toolchain
    versions stand for them in the key.
    """
    seen: dict[Path, None] = {}
    pending = [source.resolve()]
    root = root.resolve()
    while pending:
        current = pending.pop()
        for name in _LOCAL_INCLUDE.findall(current.read_bytes()):
            rel = name.decode(errors="replace")
            for base in [current.parent, *include_dirs]:
                candidate = (base / rel).resolve()
                if candidate.is_file():
                    if candidate.is_relative_to(root) and candidate not in seen:
                        seen[candidate] = None
                        pending.append(candidate)
                    break
    return sorted(seen)


def object_key(source: Path, command: list[str], toolchain: Toolchain, include_dirs: list[Path],
               root: Path) -> str:
    """sha256 hex of the source, its local headers, the command line and the toolchain."""
    h = hashlib.sha256()

    def part(label: str, data: bytes) -> None:
        # Length-prefixed parts: no two different inputs can produce the same byte stream.
        h.update(f"{label}:{len(data)}:".encode())
        h.update(data)

    part("source", source.read_bytes())
    for header in local_includes(source, include_dirs, root):
        part("header-name", header.relative_to(root.resolve()).as_posix().encode())
        part("header", header.read_bytes())
    part("command", "\0".join(command).encode())
    part("torch", toolchain.torch_version.encode())
    part("cuda", toolchain.cuda_version.encode())
    part("compiler", toolchain.compiler_version.encode())
    return h.hexdigest()


class ObjectCache:
    """A directory of `<key[:2]>/<key>.o` files, plus the compiler log of each as `<key>.log`."""

    def __init__(self, root: Path):
        self.root = root

    def _path(self, key: str, suffix: str) -> Path:
        return self.root / key[:2] / f"{key}{suffix}"

    def get(self, key: str) -> Path | None:
        path = self._path(key, ".o")
        return path if path.is_file() else None

    def log(self, key: str) -> str:
        path = self._path(key, ".log")
        return path.read_text(errors="replace") if path.is_file() else ""

    def put(self, key: str, obj: Path, log: str) -> Path:
        """Store a freshly compiled object atomically; returns its path in the cache."""
        dest = self._path(key, ".o")
        dest.parent.mkdir(parents=True, exist_ok=True)
        for data, target in ((None, dest), (log, self._path(key, ".log"))):
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".tmp-")
            os.close(fd)
            os.chmod(tmp, 0o644)    # mkstemp's 0600 would hide it from the box's user at link time
            if data is None:
                shutil.copyfile(obj, tmp)
            else:
                Path(tmp).write_text(data)
            os.replace(tmp, target)
        return dest
