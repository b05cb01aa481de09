"""Removing a job's folders (checkouts, the box's output folder, build trees) when the job ends.

What is in them was made by submitted code or by its repository: a tree nested 1500 levels deep made
`shutil.rmtree` raise RecursionError (Python 3.11 recurses once per level, and `ignore_errors` does not
catch it), links and files the gate's user cannot write. `rm -rf` walks with fts, without recursion
and without following links, and `--one-file-system` keeps it from descending into a mount.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)
REMOVE_TIMEOUT_S = 300


def remove(path: Path) -> None:
    """Remove `path` and everything under it; a folder that is already gone is fine. Never raises:
    a folder left behind is logged (it costs disk, not correctness)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    rm = shutil.which("rm")
    try:
        if rm is None:
            shutil.rmtree(path, ignore_errors=True)
        else:
            subprocess.run([rm, "-rf", "--one-file-system", "--", str(path)], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=REMOVE_TIMEOUT_S,
                           check=False)
    except (OSError, RecursionError, subprocess.TimeoutExpired) as exc:
        log.warning("could not remove %s: %s", path, exc)
    if path.exists():
        log.warning("job folder %s is still there after removal", path)
