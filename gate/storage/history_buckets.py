"""How a long history becomes at most `max_points` points: equal revision-id buckets (pure).

A bucket holds consecutive revision ids; its point is the mean with the min..max spread, opens the
bucket's newest revision, and wears the worst verdict inside it, so a reject is never averaged away.
"""

from __future__ import annotations

from collections.abc import Iterable

from gate.storage.queries import VERDICT_SEVERITY

_RANK = {v: i for i, v in enumerate(VERDICT_SEVERITY)}   # lower = worse


def bucket_width(first_id: int, last_id: int, revisions: int, max_points: int) -> int:
    """Revision ids per bucket: 1 (every revision a point) unless there are over `max_points`."""
    if revisions <= max_points:
        return 1
    return -(-(last_id - first_id + 1) // max_points)


def worst_verdict_per_bucket(order: Iterable[tuple[int, str]], first_id: int,
                             width: int) -> dict[int, str]:
    """Bucket index -> the worst verdict among its (revision id, verdict) pairs.

    A verdict outside VERDICT_SEVERITY ranks after every known one.
    """
    worst: dict[int, str] = {}
    unknown = len(_RANK)
    for rev_id, verdict in order:
        key = (rev_id - first_id) // width
        held = worst.get(key)
        if held is None or _RANK.get(verdict, unknown) < _RANK.get(held, unknown):
            worst[key] = verdict
    return worst
