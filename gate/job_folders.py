"""Removing a job's folders (checkouts, the box's output folder, build trees) when the job ends.

What is in them was made by submitted code or by its repository: a tree nested 1500 levels deep,
links, folders made read-only. `sources.tree_removal.remove_tree` (the planner's remover) handles
all of them without recursion and without following a link; here a failure is only logged.
"""

from __future__ import annotations

import logging
from pathlib import Path

from gate.sources.tree_removal import remove_tree

log = logging.getLogger(__name__)


def remove(path: Path) -> None:
    """Remove `path` and everything under it; a folder that is already gone is fine. Never raises:
    a folder left behind is logged (it costs disk, not correctness)."""
    try:
        remove_tree(Path(path))
    except OSError as exc:
        log.warning("job folder %s is still there after removal: %s", path, exc)
