"""Host-wide leases on numbered places, one `flock`ed file per place under `LEASE_DIR`: a box's user
id (`gate.box`: every box of the host runs as its own user, so that RLIMIT_NPROC, which counts every
process and thread of a user, bounds one box and not all of them together) and a compile's place in
the host's compile pool (`gate.nvidia.compiler`). Host-wide: two `gate run` processes with their own
data folders, the workers of several GPUs and the GPU children inside their boxes (which see the
compile places' folder, bound read-only) all lock the same files.

A lease ends when its holder closes the file or dies: the kernel drops the lock, so a killed gate
leaves nothing behind to clean up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import time
from pathlib import Path

LEASE_DIR = Path("/tmp/gate-leases")
POLL_S = 0.05
# A place's file is opened neither through a link nor waiting on a FIFO: anyone may write in /tmp.
_NOT_A_TRAP = os.O_NOFOLLOW | os.O_NONBLOCK


class Lease:
    """One place held: `number` of its kind's `count`, until `release` (or the process's end)."""

    def __init__(self, number: int, fd: int):
        self.number, self._fd = number, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def folder(kind: str, count: int) -> Path:
    """The folder of `kind`'s places, with a file for each of the first `count` (made where this
    process may write; a box reads those its parent made). Never through a link: the folder is in
    /tmp, where anyone could have put one."""
    for path in (LEASE_DIR, LEASE_DIR / kind):
        with contextlib.suppress(OSError):
            _shared_dir(path)
    with contextlib.suppress(OSError):
        fd = os.open(LEASE_DIR / kind, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for number in range(count):
                with contextlib.suppress(OSError):
                    os.close(os.open(str(number), os.O_RDONLY | os.O_CREAT | _NOT_A_TRAP, 0o644, dir_fd=fd))
        finally:
            os.close(fd)
    return LEASE_DIR / kind


def _shared_dir(path: Path) -> None:
    """`path` made a directory every user may lock files in (a gate run by another user shares the
    same places), if it is this user's own."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, 0o1777)
    finally:
        os.close(fd)


def take(kind: str, count: int, wait_s: float) -> Lease | None:
    """A free place of `count`, tried from a random one so that waiters spread; None when none came
    free within `wait_s` (the caller decides what a bounded wait then means)."""
    where = folder(kind, count)
    deadline = time.monotonic() + wait_s
    while True:
        start = random.randrange(count)
        for step in range(count):
            number = (start + step) % count
            try:
                fd = os.open(where / str(number), os.O_RDONLY | _NOT_A_TRAP)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            return Lease(number, fd)
        if time.monotonic() >= deadline:
            return None
        time.sleep(POLL_S)
