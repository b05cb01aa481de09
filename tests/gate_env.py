"""The environment for a test that starts `python -m gate...` in a subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import gate


def with_pythonpath(*first: str | Path) -> str:
    """`first`, then this checkout's `gate`, then whatever PYTHONPATH already holds (on the GPU
    machine, the carried wheels: replacing it loses them)."""
    root = Path(gate.__file__).resolve().parent.parent
    paths = [*map(str, first), str(root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return os.pathsep.join(dict.fromkeys(paths))


def gate_env(**extra: str) -> dict[str, str]:
    """os.environ with `extra` and a PYTHONPATH that finds this checkout's `gate` first."""
    return {**os.environ, **extra, "PYTHONPATH": with_pythonpath()}
