"""The compare page's table: every figure two revisions share, side by side, with its change."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gate.domain.names import Direction
from gate.read_models.revision import RevisionMetric

NOTICEABLE_PCT = 1.0     # a change smaller than this reads as no change (no colour)


@dataclass
class CompareRow:
    kernel: str
    gpu: str
    name: str                     # `gate.domain.names.Metric` value
    shape: str
    series: str
    unit: str
    direction: str                # `gate.domain.names.Direction` value
    a: float | None = None        # the first revision's value; None when it has none
    b: float | None = None

    @property
    def delta_pct(self) -> float | None:
        """b against a, in % of a; None unless both exist and a is not zero."""
        if not self.a or self.b is None:
            return None
        return 100.0 * (self.b - self.a) / abs(self.a)

    @property
    def tone(self) -> str:
        """"good", "bad" or "" (no change worth a colour, or nothing to compare)."""
        delta = self.delta_pct
        if delta is None or abs(delta) < NOTICEABLE_PCT:
            return ""
        return "good" if (delta < 0) == (self.direction == Direction.LOWER) else "bad"


def compare_rows(metrics: Iterable[RevisionMetric], a: int, b: int) -> list[CompareRow]:
    """One row per (kernel, GPU kind, metric, shape, series) of revisions `a` and `b`, in first-seen order."""
    rows: dict[tuple[str, str, str, str, str], CompareRow] = {}
    for m in metrics:
        key = (m.kernel, m.gpu_kind, m.name, m.shape, m.series)
        row = rows.setdefault(key, CompareRow(m.kernel, m.gpu_kind, m.name, m.shape, m.series, m.unit,
                                              m.direction))
        if m.revision_id == a:
            row.a = m.value
        else:
            row.b = m.value
    return list(rows.values())
