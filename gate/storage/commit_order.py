"""The order a kernel's history is drawn in: the repository's, not the order of submission (pure, numpy).

Issue 45 (docs/design.md, "History in commit order"): submitting HEAD first and its ancestors after
drew the newest commit on the left, and change points were searched on that false order. The line is
ordered by (position, commit time, revision id): positions of one line are distinct, so commit time
only breaks the ties the graph leaves open, and the id those of one commit. A revision planned
before positions were kept (None) takes the highest known position of a line revision committed no
later than it (none: before all of them); one without a commit time sorts before those that have one.
Revisions off the line are drawn beside the line's last revision at or below their depth (`beside`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CommitOrder:
    """Per verdict row (the cache's rows, in id order): where it is drawn."""

    rank: np.ndarray        # int64: its place on the line, 0 = oldest; -1 off the line
    beside: np.ndarray      # int64: the line place it is drawn at (= rank on the line)
    line: np.ndarray        # int64: the rows on the line in order (rank -> row)


def commit_order(revision_ids: np.ndarray, positions: np.ndarray, times: np.ndarray,
                 on_branch: np.ndarray) -> CommitOrder:
    """The order of verdict rows given their revision ids, positions (NaN: unknown), commit times
    (seconds, NaN: unknown) and whether they are on the drawn branch (all aligned)."""
    ids = np.asarray(revision_ids, dtype=np.int64)
    pos = np.asarray(positions, dtype=np.float64)
    t = np.nan_to_num(np.asarray(times, dtype=np.float64), nan=-np.inf)
    on = np.asarray(on_branch, dtype=bool)
    place = _effective_positions(pos, t, on)
    line = np.flatnonzero(on)
    line = line[np.lexsort((ids[line], t[line], place[line]))]
    rank = np.full(ids.size, -1, dtype=np.int64)
    rank[line] = np.arange(line.size)
    beside = rank.copy()
    off = ~on     # drawn at the line's last place at or below their depth (0 below every one, or no line)
    beside[off] = np.maximum(np.searchsorted(place[line], place[off], side="right") - 1, 0)
    return CommitOrder(rank, beside, line)


def _effective_positions(pos: np.ndarray, t: np.ndarray, on: np.ndarray) -> np.ndarray:
    """Each row's position; an unknown one is the highest known line position committed no later
    (-1 when there is none: before every known one)."""
    known = ~np.isnan(pos)
    if known.all():
        return pos
    anchors = np.flatnonzero(known & on)
    anchors = anchors[np.argsort(t[anchors], kind="stable")]
    highest = np.maximum.accumulate(pos[anchors]) if anchors.size else pos[anchors]
    unknown = np.flatnonzero(~known)
    at = np.searchsorted(t[anchors], t[unknown], side="right") - 1
    out = pos.copy()
    out[unknown] = np.where(at >= 0, highest[np.maximum(at, 0)] if anchors.size else -1.0, -1.0)
    return out
