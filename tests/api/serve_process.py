"""`gate serve` as a real child process on a free loopback port, for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import httpx

from tests.patience import HANG_S

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], Any], timeout_s: float = HANG_S, what: str = "condition",
             alive: Callable[[], bool] = lambda: True) -> Any:
    """`predicate()`'s first true value; fails once `alive()` is false (the process waited on has
    died: no point waiting longer) or after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if not alive():
            raise AssertionError(f"gave up waiting for {what}: the process it depends on has exited")
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def gate_env(**settings: str) -> dict[str, str]:
    """The environment of a `gate` child: this checkout importable, no token, the given GATE_* values."""
    # No precompiled torch headers (`gate pch` in the background) unless a test asks: with torch
    # installed, a minute of compiling beside a test that times the server's answers on 2 cores.
    env = {**os.environ, "GATE_TORCH_PCH": "off", **settings,
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "api")])}
    env.pop("GATE_API_TOKEN", None)
    return env


def start_server(env: dict[str, str], port: int, log: IO[str]) -> subprocess.Popen:
    """Start `gate serve` and return once /healthz answers 200: however long a busy machine takes to
    start it, but no longer than it lives (a server that exits fails at once, its log says why). A
    server that does not answer is killed and reaped, never left to a later test's garbage collection."""
    proc = subprocess.Popen([sys.executable, "-m", "gate.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=log)

    def up() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
        except httpx.TransportError:
            return False
    try:
        wait_for(up, what="the server to answer", alive=lambda: proc.poll() is None)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc
