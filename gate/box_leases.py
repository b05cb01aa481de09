"""Host-wide leases on numbered places, one `flock`ed file per place under `LEASE_DIR`: a box's own
user id (`gate.box`) and a compile's place in the host's pool (`gate.nvidia.compiler`). Every gate
process of the host (two `gate run`s with their own data folders, the workers of several GPUs) and
the GPU children in their boxes (the places' folder bound read-only) lock the same files. The kernel
drops a lock when its holder dies: a killed gate leaves nothing to clean up.
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
    process may write; a box reads those its parent made). Every step is taken from the folder above
    without following a link: the folder is in /tmp, where anyone could have put one."""
    fds: list[int] = []
    try:
        fds.append(os.open(LEASE_DIR.parent, os.O_RDONLY | os.O_DIRECTORY))
        for name in (LEASE_DIR.name, kind):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=fds[-1])
            fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
            if os.fstat(fds[-1]).st_uid == os.geteuid():     # a gate run by another user shares them
                os.fchmod(fds[-1], 0o1777)
        for number in range(count):
            with contextlib.suppress(OSError):
                os.close(os.open(str(number), os.O_RDONLY | os.O_CREAT | _NOT_A_TRAP, 0o644, dir_fd=fds[-1]))
    except OSError:
        pass
    finally:
        for fd in fds:
            os.close(fd)
    return LEASE_DIR / kind


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
