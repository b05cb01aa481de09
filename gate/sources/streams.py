"""git's output read with a bound: never more of it in memory than the caller can use.

What git prints is the repository owner's to choose: a commit message can be hundreds of MiB, a
remote can stream `remote:` lines for as long as the clone's timeout allows, and a blob is any
size (issue 12: a 1 GiB blob took the server from 333 to 2,391 MiB). So stdout is read up to a
cap (git is killed past it) and stderr is kept as its last `TAIL_BYTES` only, which still holds
git's `fatal:` line; archives are streamed to files by the mirror (`mirror._export`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TAIL_BYTES = 64 << 10
CHUNK_BYTES = 64 << 10


class Tail:
    """Reads `stream` in a daemon thread, keeping only its last `max_bytes` (a flood costs nothing)."""

    def __init__(self, stream: IO[bytes], max_bytes: int = TAIL_BYTES):
        self.max_bytes = max_bytes
        self.dropped_bytes = 0
        self._buffer = bytearray()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True, name="git-stderr")
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        while chunk := stream.read1(CHUNK_BYTES):
            self._buffer += chunk
            if len(self._buffer) > 2 * self.max_bytes:
                excess = len(self._buffer) - self.max_bytes
                del self._buffer[:excess]
                self.dropped_bytes += excess

    def text(self, timeout_s: float = 5.0) -> str:
        """What was kept, once the stream ended (or `timeout_s` passed); a cut first line dropped."""
        self._thread.join(timeout_s)
        data = bytes(self._buffer[-self.max_bytes:])
        if self.dropped_bytes or len(self._buffer) > self.max_bytes:
            data = data.split(b"\n", 1)[-1]
        return data.decode(errors="replace")


@dataclass(frozen=True)
class Capped:
    returncode: int          # git's, or negative when killed (the cap or the timeout)
    stdout: bytes            # at most the cap
    truncated: bool          # git printed more than the cap and was killed
    timed_out: bool
    stderr: str              # the last TAIL_BYTES


def run_capped(cmd: list[str], *, cwd: Path | None, env: dict[str, str], timeout_s: float,
               max_stdout_bytes: int) -> Capped:
    """Run `cmd` (in its own process group), keeping at most `max_stdout_bytes` of its stdout: past
    that, or past `timeout_s`, the group is killed. Raises FileNotFoundError when there is no `cmd[0]`."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    tail = Tail(proc.stderr)
    timed_out = threading.Event()

    def expire() -> None:
        timed_out.set()
        _kill_group(proc)

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    out, truncated = bytearray(), False
    try:
        while chunk := proc.stdout.read1(CHUNK_BYTES):
            out += chunk
            if len(out) > max_stdout_bytes:
                truncated = True
                _kill_group(proc)
                break
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait()
        stderr = tail.text()
        proc.stdout.close()
        proc.stderr.close()
    return Capped(proc.returncode, bytes(out[:max_stdout_bytes]), truncated, timed_out.is_set(), stderr)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
