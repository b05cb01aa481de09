"""The return path from the box: the one way the parent opens a file that boxed code could have written.

Everything in a job's artifacts folder was written by submitted code, and the parent runs as root: code
in the child once made `x.ncu-rep -> /etc/shadow`, `build.log -> <the server's database>` and a link to
`/proc/self/environ` (the server's tokens), and the parent copied the targets into its artifact store.

`open_returned` is the boundary (docs/security.md, "The return path"): it walks `relative` from a
directory descriptor of `root` (`openat` with `O_NOFOLLOW`, `..` refused by name), opens the file with
`O_NONBLOCK` (a FIFO never blocks the parent), then checks the open descriptor, never the path: a
regular file with one link (a hard link is a second name of a file that lives elsewhere), within the
per-file cap and what is left of the job's. A refusal raises `Refused` with the reason; the caller
names it in the job's evidence and reads nothing of it. `read_returned`, `copy_returned` and `listed`
go through it, or walk the same way.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

MiB = 1 << 20
# An .ncu-rep of the demo's kernels is 1-20 MiB with the gate's sections; logs and JSON are KiB.
FILE_CAP_BYTES = 256 * MiB
JOB_CAP_BYTES = 512 * MiB
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 * MiB
# A job's folder is walked no deeper and no wider than this (a box can make either without end).
MAX_DEPTH = 32
MAX_ENTRIES = 10_000
MAX_MEASURED = 100_000
OVER_ANY_CAP = 1 << 62


class Refused(Exception):
    """A returned file the parent will not read; the message says which and why."""


@dataclass
class Budget:
    """What one job may hand back: a cap per file and for all its files together, and what was refused."""

    file_bytes: int = field(default_factory=lambda: FILE_CAP_BYTES)   # read when made: tests lower it
    job_bytes: int = field(default_factory=lambda: JOB_CAP_BYTES)
    taken_bytes: int = 0                                     # accepted so far, all files
    refused: list[str] = field(default_factory=list)         # "name: why", one per refused file

    def refuse(self, relative: str, why: str) -> Refused:
        line = f"{relative}: {why}"
        if line not in self.refused:
            self.refused.append(line)
        return Refused(f"returned file refused, {line}")

    def evidence(self) -> list[str]:
        """The lines a job shows for what its box handed back and the parent refused."""
        return [f"returned file refused (not read): {line}" for line in self.refused]


def _parts(relative: str) -> list[str]:
    parts = [p for p in Path(relative).parts if p not in ("", ".")]
    if Path(relative).is_absolute() or not parts or ".." in parts:
        raise ValueError(f"{relative!r} is not a plain path inside the job's folder")
    return parts


def _why_not(error: OSError) -> str:
    if error.errno == errno.ELOOP:       # O_NOFOLLOW met a symbolic link
        return "a symbolic link"
    if error.errno == errno.ENOTDIR:     # O_DIRECTORY|O_NOFOLLOW met a link or a file
        return "a path component is a symbolic link or not a directory"
    if error.errno == errno.ENOENT:
        return "missing"
    return f"cannot be opened ({os.strerror(error.errno or 0)})"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def open_returned(root: Path, relative: str, budget: Budget) -> BinaryIO:
    """`root/relative` opened for reading if the box may hand it back, else `Refused`. The caller reads at
    most the size `os.fstat` reports, which this has counted against `budget`."""
    parts = _parts(relative)
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(root, _DIR_FLAGS))
            for part in parts[:-1]:
                fds.append(os.open(part, _DIR_FLAGS, dir_fd=fds[-1]))
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=fds[-1])
        except OSError as exc:
            raise budget.refuse(relative, _why_not(exc)) from None
    finally:
        for opened in fds:
            os.close(opened)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise budget.refuse(relative, _kind(info.st_mode))
        if info.st_nlink != 1:
            raise budget.refuse(relative, f"a hard link ({info.st_nlink} names for one file)")
        if info.st_size > budget.file_bytes:
            raise budget.refuse(relative, f"{info.st_size} bytes, over the {budget.file_bytes}-byte cap per file")
        if budget.taken_bytes + info.st_size > budget.job_bytes:
            raise budget.refuse(relative, f"{info.st_size} bytes would pass the job's {budget.job_bytes}-byte cap")
        os.set_blocking(fd, True)
        budget.taken_bytes += info.st_size
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_returned(root: Path, relative: str, budget: Budget) -> bytes:
    """The bytes of a returned file (small ones: the result JSON)."""
    with open_returned(root, relative, budget) as handle:
        return handle.read(os.fstat(handle.fileno()).st_size)


def copy_returned(root: Path, relative: str, target: Path, budget: Budget) -> Path:
    """Copy a returned file to `target` (a path the box cannot reach), at most the size it had when
    opened: a file that grows meanwhile does not pass its cap."""
    with open_returned(root, relative, budget) as source:
        left = os.fstat(source.fileno()).st_size
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as sink:
            try:
                while left > 0 and (chunk := source.read(min(_CHUNK, left))):
                    sink.write(chunk)
                    left -= len(chunk)
            except BaseException:       # a disk filled meanwhile: no half copy stays behind
                os.unlink(target)
                raise
    return target


def listed(root: Path) -> list[str]:
    """The relative names of every entry under `root` but its directories, no link followed: a linked
    directory, or one nested deeper than `MAX_DEPTH`, is listed as its name (`open_returned` refuses it)."""
    found: list[str] = []
    for name, _info, too_deep in _entries(root):
        if too_deep or not stat.S_ISDIR(_info.st_mode):
            found.append(name)
        if len(found) >= MAX_ENTRIES:
            break
    return found


def usage_bytes(root: Path) -> int:
    """The disk space used under `root` (allocated blocks, links not followed). A folder nested
    deeper than `MAX_DEPTH`, or more than `MAX_MEASURED` entries, counts as over any cap: the parent
    measures every second, and a walk without end would stall it."""
    total = 0
    for count, (_name, info, too_deep) in enumerate(_entries(root)):
        if too_deep or count >= MAX_MEASURED:
            return OVER_ANY_CAP
        total += info.st_blocks * 512
    return total


def _entries(root: Path) -> Iterator[tuple[str, os.stat_result, bool]]:
    """(relative name, lstat, not walked: too deep or not openable) of every entry under `root`, depth first,
    without recursion (the parent's stack is no one else's to choose), at most `MAX_DEPTH` directories open."""
    try:
        top = os.open(root, _DIR_FLAGS)
    except OSError:
        return
    stack: list[tuple[int, str, Iterator[os.DirEntry]]] = []

    def enter(fd: int, prefix: str) -> None:
        try:
            with os.scandir(fd) as scan:
                names = sorted(scan, key=lambda e: e.name)
        except OSError:
            os.close(fd)
            raise
        stack.append((fd, prefix, iter(names)))

    try:
        enter(top, "")
    except OSError:
        return
    try:
        while stack:
            fd, prefix, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(stack.pop()[0])
                continue
            name = f"{prefix}{entry.name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode):
                yield name, info, False
                continue
            if len(stack) >= MAX_DEPTH:
                yield name, info, True
                continue
            try:
                enter(os.open(entry.name, _DIR_FLAGS, dir_fd=fd), f"{name}/")
            except OSError:
                yield name, info, True
                continue
            yield name, info, False
    finally:
        for fd, _prefix, _entries_left in stack:
            os.close(fd)
