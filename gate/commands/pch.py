"""`gate pch`: precompile torch's headers for the binding compiles (`GATE_TORCH_PCH`).

A cold job's torch binding compile is mostly GCC reading torch's headers; with them precompiled it
takes about half as long (gate/compiling/torch_pch.py). `gate serve` (with its executor), `gate
worker` and `gate demo` start this in the background on a machine with a GPU, where alone the build
stage compiles bindings; run it by hand to have them before the first job (e.g. before `gate run`).
Headers already made for this toolchain are left alone, so it is cheap to repeat; one that did not
compile is tried again only when run by hand (the background maker leaves it).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.config import Settings


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pch", help="precompile torch's headers for binding compiles (GATE_TORCH_PCH)")
    p.add_argument("--service", action="store_true",
                   help="for the service's data folder (serve, worker) instead of gate run's and gate demo's")
    p.add_argument("--data-dir", type=Path, default=None, help="for this data folder (default: GATE_DATA_DIR)")
    p.add_argument("--parent", type=int, default=None, help=argparse.SUPPRESS)   # stop when this process ends


def main(args: argparse.Namespace) -> int:
    from gate.compiling import toolchain as tc
    from gate.compiling.torch_pch_make import make
    from gate.config import get_settings

    settings = get_settings(service=args.service)
    if args.data_dir is not None:
        settings = settings.model_copy(update={"data_dir": args.data_dir})
    root = settings.pch_dir()
    if root is None:
        print("GATE_TORCH_PCH=off: no header to precompile")
        return 0
    if args.parent is not None:
        _end_with(args.parent)
    made = make(root, tc.discover(settings.nvcc_path), settings.torch_pch, retry=args.parent is None)
    for one in made:
        said = {"made": f"made in {one.seconds:.1f} s", "there": "already made", "busy": "being made by another process",
                "failed": "failed (binding compiles that include it first read it as before)"}[one.state]
        print(f"{one.header}: {said}" + (f"\n{one.detail}" if one.state == "failed" else ""), flush=True)
    print(f"in {made[0].detail if made and made[0].state in ('made', 'there') else root}")
    return 1 if any(one.state == "failed" for one in made) else 0


def precompile_in_background(settings: Settings) -> subprocess.Popen | None:
    """Start `gate pch` for `settings`' data folder at a lower priority, its output in `make.log`
    beside the headers; stopped with this process. None when GATE_TORCH_PCH is off. Jobs that
    start before it is done compile as before (they never wait for a header)."""
    from gate.compiling.toolchain import gate_python_env

    root = settings.pch_dir()
    if root is None:
        return None
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)           # the box's user reads it when the gate runs as root
    nice = [found, "-n", "10"] if (found := shutil.which("nice")) else []
    with open(root / "make.log", "w") as log:
        proc = subprocess.Popen([*nice, sys.executable, "-m", "gate.cli", "pch", "--data-dir", str(settings.data_dir),
                                 "--parent", str(os.getpid())],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**gate_python_env(), "GATE_NVCC_PATH": settings.nvcc_path,
                                                             "GATE_TORCH_PCH": ",".join(settings.torch_pch)})
    atexit.register(_stop, proc)
    return proc


def _end_with(parent: int) -> None:
    """End this process and its compiler (its process group) once `parent` is gone: a server killed
    without its exit handlers must not leave a compile of torch's headers running for a minute."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os.killpg(os.getpgrp(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _stop(proc: subprocess.Popen) -> None:
    """End the maker and its compiler (its own process group) if it is still running."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
