"""Content-addressed cache of compiled objects (`.o`), the core of `build.py`.

An object's key is the sha256 of everything that can change the bytes the compiler writes (source,
local headers, command line, toolchain versions), so two revisions that differ only in a kernel `.cu`
share the binding's object. Entries are renamed into place: concurrent jobs never read half an object.

Beside an object the cache keeps its SASS opcode histograms (`<key>.sass.json`), so a revision that
leaves a source alone does not disassemble it again (causal-conv1d's backward object, 24 MB with
1,080 functions, took 71 s in cuobjdump and 14 s to parse on a 2-core machine, in every job).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

_INCLUDE = re.compile(rb'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', re.MULTILINE)


@dataclass(frozen=True)
class Toolchain:
    """Versions that enter every object key."""

    torch_version: str
    cuda_version: str
    compiler_version: str          # `nvcc --version` or `c++ --version`, first lines


def local_includes(source: Path, include_dirs: list[Path], root: Path) -> list[Path]:
    """Every file of the checkout (`root`) reached from `source` through its includes, in a stable order.

    Quoted includes are looked up next to the including file, then in `include_dirs`; angle includes
    (a vendored CUTLASS's) in `include_dirs` only, as the compilers do. Files outside `root` are not
    followed: the toolchain versions stand for them. GCC reads `<dir>/<name>.gch` (a file or a folder)
    before `<dir>/<name>` in every folder it searches, whether or not the header is there, so such a
    file is keyed too: a submission cannot leave an object its sources do not account for in the
    shared cache."""
    seen: dict[Path, None] = {}
    pending = [source.resolve()]
    root = root.resolve()

    def keep(path: Path) -> None:
        if path.is_relative_to(root) and path not in seen:
            seen[path] = None
            pending.append(path)

    while pending:
        current = pending.pop()
        if current.suffix == ".gch" or current.is_dir():
            continue                                   # keyed by its bytes, never parsed
        for quoted, angled in _INCLUDE.findall(current.read_bytes()):
            rel = (quoted or angled).decode(errors="replace")
            for base in ([current.parent] if quoted else []) + list(include_dirs):
                gch = (base / f"{rel}.gch").resolve()
                if gch.is_file():
                    keep(gch)
                elif gch.is_dir():
                    for one in sorted(p for p in gch.rglob("*") if p.is_file()):
                        keep(one.resolve())
                candidate = (base / rel).resolve()
                if candidate.is_file():
                    keep(candidate)
                    break
    return sorted(seen)


def hash_parts(parts: Iterable[tuple[str, bytes]]) -> str:
    """sha256 hex of (label, data) parts, length-prefixed: no two different inputs give one byte stream."""
    h = hashlib.sha256()
    for label, data in parts:
        h.update(f"{label}:{len(data)}:".encode())
        h.update(data)
    return h.hexdigest()


def object_key(source: Path, command: list[str], toolchain: Toolchain, include_dirs: list[Path],
               root: Path) -> str:
    """sha256 hex of the source, its local headers, the command line and the toolchain."""
    def parts() -> Iterator[tuple[str, bytes]]:
        yield "source", source.read_bytes()
        for header in local_includes(source, include_dirs, root):
            yield "header-name", header.relative_to(root.resolve()).as_posix().encode()
            yield "header", header.read_bytes()
        yield "command", "\0".join(command).encode()
        yield "torch", toolchain.torch_version.encode()
        yield "cuda", toolchain.cuda_version.encode()
        yield "compiler", toolchain.compiler_version.encode()
    return hash_parts(parts())


class ObjectCache:
    """A directory of `<key[:2]>/<key>.o` files, plus the compiler log of each as `<key>.log` and its
    SASS histograms as `<key>.sass.json`; a failed compile leaves only its log, `<key>.failed.log`."""

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
        write_atomic(dest, obj)
        write_atomic(self._path(key, ".log"), log)
        return dest

    def failure(self, key: str) -> str | None:
        """The log of a failed compile of `key`, or None: equal keys fail alike, so a revision that leaves
        a broken source alone does not wait for it a second time."""
        path = self._path(key, ".failed.log")
        return path.read_text(errors="replace") if path.is_file() else None

    def put_failure(self, key: str, log: str) -> None:
        """Store the log of a failed compile of `key` (never a timeout: that depends on the machine)."""
        write_atomic(self._path(key, ".failed.log"), log)

    def sass(self, key: str, stamp: str) -> dict[str, dict[str, int]] | None:
        """The opcode histograms stored for `key` under `stamp` (disassembler and parser format), or None."""
        try:
            stored = json.loads(self._path(key, ".sass.json").read_text())
        except (OSError, ValueError):
            return None
        functions = stored.get("functions") if isinstance(stored, dict) and stored.get("stamp") == stamp else None
        valid = isinstance(functions, dict) and all(
            isinstance(ops, dict) and all(isinstance(n, int) for n in ops.values()) for ops in functions.values())
        return functions if valid else None

    def put_sass(self, key: str, stamp: str, functions: dict[str, dict[str, int]]) -> None:
        write_atomic(self._path(key, ".sass.json"), json.dumps({"stamp": stamp, "functions": functions}))


def write_atomic(target: Path, data: Path | str) -> None:
    """`data` (a file to copy, or text) into `target` through a temporary name (a reader sees all or none)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    os.close(fd)
    os.chmod(tmp, 0o644)    # mkstemp's 0600 would hide it from the box's user (at link time, in a job)
    if isinstance(data, Path):
        shutil.copyfile(data, tmp)
    else:
        Path(tmp).write_text(data)
    os.replace(tmp, target)
