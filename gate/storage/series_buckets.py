"""How a long history becomes at most `max_points` points: equal revision-id buckets (pure, numpy).

A bucket holds consecutive revision ids; its point is the mean with the min..max spread, opens the
bucket's newest revision, and wears the worst verdict inside it, so a reject is never averaged away.
Verdicts travel as codes: indexes into `verdict_vocabulary`, which lists the known verdicts worst
first, so the worst verdict of a bucket is its smallest code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from gate.domain.verdict import SEVERITY_ORDER

VERDICT_SEVERITY = tuple(v.value for v in SEVERITY_ORDER)


@dataclass(frozen=True)
class Buckets:
    newest_ids: np.ndarray      # int64: each bucket's newest revision (what a click opens)
    mean: np.ndarray            # float64
    low: np.ndarray
    high: np.ndarray
    count: np.ndarray           # int64: rows behind each point


def bucket_width(first_id: int, last_id: int, revisions: int, max_points: int) -> int:
    """Revision ids per bucket: 1 (every revision a point) unless there are over `max_points`."""
    if revisions <= max_points:
        return 1
    return -(-(last_id - first_id + 1) // max_points)


def verdict_vocabulary(verdicts: Iterable[str], known: tuple[str, ...] = VERDICT_SEVERITY
                       ) -> tuple[str, ...]:
    """`known` (worst first), then any other verdict in `verdicts` in the order met: these rank
    after every known one."""
    return (*known, *dict.fromkeys(v for v in verdicts if v not in known))


def bucket_series(revision_ids: np.ndarray, values: np.ndarray, first_id: int,
                  width: int) -> Buckets:
    """One point per bucket of `width` revision ids counted from `first_id`; with width 1, every
    row is its own point (two rows of one revision stay two points). `revision_ids` ascending."""
    ids = np.asarray(revision_ids, dtype=np.int64)
    vals = np.asarray(values, dtype=np.float64)
    if width == 1 or ids.size == 0:
        return Buckets(ids, vals, vals, vals, np.ones(ids.size, dtype=np.int64))
    keys = (ids - first_id) // width
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    count = np.diff(np.r_[starts, ids.size])
    return Buckets(np.maximum.reduceat(ids, starts), np.add.reduceat(vals, starts) / count,
                   np.minimum.reduceat(vals, starts), np.maximum.reduceat(vals, starts), count)


def worst_places(codes: np.ndarray, width: int, at: np.ndarray) -> np.ndarray:
    """For each line place of `at`, the newest place of its bucket that bears the bucket's worst
    verdict: the revision whose verdict, deciding rule and failing rules the bucket's point shows.

    `codes` are the verdict codes of line places 0, 1, ... in order; buckets are `width` places each.
    """
    codes = np.asarray(codes, dtype=np.int64)
    places = np.arange(codes.size)
    starts = np.arange(0, codes.size, width)
    worst = np.minimum.reduceat(codes, starts) if codes.size else codes
    bearing = np.where(codes == worst[places // width], places, -1)
    newest = np.maximum.reduceat(bearing, starts) if codes.size else bearing
    return newest[np.asarray(at, dtype=np.int64) // width]
