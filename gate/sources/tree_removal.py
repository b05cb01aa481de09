"""Removing a folder tree of any depth: a checked-out revision may hold a 1500-level directory,
and `shutil.rmtree` and `os.walk` (Python 3.11) recurse once per level, so such a tree raised
RecursionError in the planner and, as the revision stayed queued, at every start-up (issue 24).

`remove_tree` keeps its own stack of open directory descriptors (names are looked up relative to
their parent, so no path grows past PATH_MAX) and never follows a link: a link is removed as a
file, its target is left alone.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def remove_tree(path: Path) -> None:
    """Remove `path` and everything under it (absent: nothing to do). OSError when a part cannot be
    removed: the caller decides whether a left-over temporary folder matters."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return
    stack = [(os.open(path, _DIR_FLAGS), "")]        # (descriptor, its name in the parent)
    try:
        while stack:
            fd = stack[-1][0]
            os.chmod(fd, 0o700)                      # a folder the revision made read-only
            child = _empty_but_one_folder(fd)
            if child is not None:
                with contextlib.suppress(FileNotFoundError):      # removed meanwhile by someone else: look again
                    stack.append((os.open(child, _DIR_FLAGS, dir_fd=fd), child))
                continue
            os.close(fd)
            _, name = stack.pop()
            if stack:
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(name, dir_fd=stack[-1][0])
    finally:
        for fd, _ in stack:
            os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(path)


def _empty_but_one_folder(fd: int) -> str | None:
    """Unlink every non-folder entry of the directory `fd`; the name of one sub-folder, if any."""
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=fd)
    return None
