"""The compare page's table: every figure two revisions share, side by side, with its change."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gate.domain.names import Metric, Side
from gate.domain.rule_catalog import CATALOG, JUDGES, LATENCY_TIMES, Bound
from gate.domain.verdict import RuleRow
from gate.domain.wording import display_unit
from gate.read_models.revision import RevisionMetric

NOTICEABLE_PCT = 1.0     # a change smaller than this reads as no change (no colour)

# Whether a change is better or worse is the bound of the rule that judges the figure, from the
# catalogue, never guessed from its name. The latency rule reads the candidate/baseline ratio of
# median times, so its ceiling says the same of the times themselves. A figure no rule judges
# (throughput, the separate load and store conflicts) gets no colour.
BOUND: dict[str, Bound] = {}
for _spec in CATALOG:
    if _spec.metric is not None and _spec.bound is not Bound.NONE and not _spec.baseline_profile:
        BOUND.setdefault(_spec.metric.value, _spec.bound)
for _time in LATENCY_TIMES:
    BOUND[_time.value] = BOUND[Metric.LATENCY_RATIO.value]
_TIME_NAMES = frozenset(m.value for m in (*LATENCY_TIMES, Metric.TFLOPS))

# How an engineer reads a change: times and rates in % of the old value; figures already in % as
# points (34 % -> 31 % is -3 points, not -8.8 %); a candidate/baseline ratio in % of the baseline
# (0.973 -> 0.999 is +2.6 %, never "+0.026 x"); whole quantities and bytes as the difference.
PERCENT_UNITS = frozenset({"us", "ms", "s", "kcycles", "TFLOP/s"})
POINT_UNITS = frozenset({"%"})
RATIO_UNITS = frozenset({"x"})
RATIO_STEP_PCT = 1.0     # a candidate/baseline ratio that moves less than 1 % of the baseline: no change


def judged_metrics(rules: Iterable[RuleRow]) -> frozenset[str]:
    """The figures the rules of one kernel's verdict judge: a rule the manifest leaves off writes no
    row, so dram_pct of a kernel without a DRAM rule, or registers without a register rule, are not."""
    return frozenset().union(*(JUDGES.get(r.rule, frozenset()) for r in rules))


@dataclass
class CompareRow:
    kernel: str
    gpu: str
    name: str                     # `gate.domain.names.Metric` value
    shape: str
    series: str
    unit: str
    direction: str                # `gate.domain.names.Direction` value (the table's reading hint only)
    a: float | None = None        # the first revision's value; None when it has none
    b: float | None = None
    judged: bool = True           # a rule of this kernel's verdicts judges the figure (`judged_metrics`)

    @property
    def delta_pct(self) -> float | None:
        """b against a, in % of a; None unless both exist and a is not zero."""
        if not self.a or self.b is None:
            return None
        return 100.0 * (self.b - self.a) / abs(self.a)

    @property
    def change(self) -> float | None:
        """b against a in the unit `change_text` writes: % of a, points, or the plain difference."""
        if self.a is None or self.b is None:
            return None
        if self.unit in PERCENT_UNITS:
            return self.delta_pct
        if self.unit in RATIO_UNITS:
            return 100.0 * (self.b - self.a)
        return self.b - self.a

    @property
    def change_text(self) -> str:
        """"+2.7 %", "-3.1 pts", "+4 registers", "+1 KiB", "+0.026"; "" when there is nothing to compare."""
        change = self.change
        if change is None:
            return ""
        if self.unit in PERCENT_UNITS or self.unit in RATIO_UNITS:
            return f"{change:+.1f} %"
        if self.unit in POINT_UNITS:
            return f"{change:+.1f} pts"
        if not self.unit:
            return f"{change:+.3g}"
        shown, factor = display_unit(self.unit, abs(change))
        scaled = change / factor
        number = f"{scaled:+.0f}" if scaled == int(scaled) else f"{scaled:+.3g}"
        return f"{number} {shown}"

    @property
    def moved(self) -> bool:
        """Whether the change is worth a line of its own: 1 % of a time or rate, half a point of a
        percentage, any change of a whole quantity or ratio."""
        change = self.change
        if change is None or change == 0:
            return False
        if self.unit in PERCENT_UNITS:
            return abs(change) >= NOTICEABLE_PCT
        if self.unit in POINT_UNITS:
            return abs(change) >= 0.5
        return abs(change) >= RATIO_STEP_PCT if self.unit in RATIO_UNITS else True

    @property
    def tone(self) -> str:
        """"good", "bad" or "" (no rule judges the figure, the change is too small, or nothing to
        compare): by the bound of the rule that judges it (`BOUND`)."""
        bound = BOUND.get(self.name)
        # A peer's time (sdpa_flash, cublas) is a reference, not the kernel's: no rule judges it.
        # (Static figures are per arch: their series is an arch, and the kernel's own.)
        peer = self.name in _TIME_NAMES and self.series != Side.CANDIDATE
        if peer or not self.judged or bound is None or not self.moved:
            return ""
        return "good" if (self.change < 0) == (bound is Bound.CEILING) else "bad"


def compare_rows(metrics: Iterable[RevisionMetric], a: int, b: int,
                 judged: Mapping[tuple[str, str], frozenset[str]]) -> list[CompareRow]:
    """One row per (kernel, GPU kind, metric, shape, series) of revisions `a` and `b`, in first-seen
    order; `judged`: (kernel, GPU kind) -> the figures its verdicts' rules judge (`judged_metrics`)."""
    rows: dict[tuple[str, str, str, str, str], CompareRow] = {}
    for m in metrics:
        key = (m.kernel, m.gpu_kind, m.name, m.shape, m.series)
        ruled = m.name in judged.get((m.kernel, m.gpu_kind), frozenset())
        row = rows.setdefault(key, CompareRow(m.kernel, m.gpu_kind, m.name, m.shape, m.series, m.unit,
                                              m.direction, judged=ruled))
        if m.revision_id == a:
            row.a = m.value
        else:
            row.b = m.value
    return list(rows.values())
