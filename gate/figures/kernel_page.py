"""The kernel page's charts: which metrics go together, their limits and references (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gate.domain.names import Metric, Side
from gate.domain.rule_catalog import CATALOG, JUDGES, Kind, Rule, RuleSpec
from gate.domain.verdict import RuleRow
from gate.figures.like_with_like import change_points, cycle_traces, mark_environments
from gate.figures.palette import VERDICT_COLOR, VERDICT_MARK
from gate.figures.series_charts import HistoryChart, Line, history_figure, peak_drawn, wears_verdict
from gate.nvidia.sass_families import SASS_METRICS
from gate.read_models.kernel_series import KernelHistory, SeriesHistory


@dataclass(frozen=True)
class Group:
    key: str
    title: str
    y_title: str
    metrics: tuple[Metric, ...]
    rule: Rule | None = None     # the Gates rule whose threshold is drawn (or, SASS: that judges it)
    per_shape: bool = False      # one chart per shape (scales differ by orders of magnitude)
    per_arch: bool = False       # series are target archs (ptxas figures), shape ""
    peers: bool = False          # draw SDPA / cuBLAS levels as reference lines
    families: bool = False       # with per_arch: one chart per arch, a series per metric; a metric
                                 # at 0 in every revision shown is said under the charts, not drawn


# y titles: "{unit}" becomes the unit the axis shows (µs or ms, B or KiB).
_TIMING = (
    Group("latency", "Latency", "median latency ({unit})", (Metric.LATENCY_MEDIAN_US,), per_shape=True,
          peers=True),
    Group("tflops", "Throughput", "{unit}", (Metric.TFLOPS,), per_shape=True, peers=True),
)
# Then one chart per catalogue rule with a stored figure, its threshold drawn on that figure: timing
# first, then what the profiler and the compiler measured.
_KIND_ORDER = (Kind.LATENCY, Kind.NCU_ABSOLUTE, Kind.STATIC_LIMIT)


def rule_groups(catalog: tuple[RuleSpec, ...] = CATALOG) -> tuple[Group, ...]:
    charted = [s for s in catalog if s.chart is not None and s.metric is not None and s.kind in _KIND_ORDER]
    charted.sort(key=lambda s: _KIND_ORDER.index(s.kind))
    return tuple(Group(s.chart.key, s.chart.title, s.chart.y_title, (s.metric,), rule=s.rule,
                       per_arch=s.kind is Kind.STATIC_LIMIT) for s in charted)


# Then what no rule judges: the SASS opcode families, absolute counts (`gate.nvidia.sass_families`).
# Most kernels lack some family (no TMA before sm_90, no tensor core in a scalar kernel): drawn, those
# would pile up at 0 and hold the axis linear under a total a hundred times the smallest family.
_SASS = Group("sass", "SASS opcodes", "{unit} (all functions)", SASS_METRICS, rule=Rule.REQUIRE_SASS,
              per_arch=True, families=True)
GROUPS = _TIMING + rule_groups() + (_SASS,)
# Metrics stored per target arch (series = arch, shape ""), as `gate.storage.recording` writes them.
PER_ARCH_METRICS = frozenset(m.value for g in GROUPS if g.per_arch for m in g.metrics)
PEER_METRIC = {"latency": Metric.LATENCY_MEDIAN_US.value, "tflops": Metric.TFLOPS.value}
PEAK_GROUP = "tflops"        # the chart the GPU's physical peak is drawn on


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    figure: dict
    marks: frozenset[str] = frozenset()    # what it draws besides its series, and the verdicts its
                                           # points wear as `verdict:<verdict>` (`page_legend`)


def wanted_traces(shapes: Sequence[str], archs: Sequence[str]) -> list[tuple[str, str, str]]:
    """Every (metric, shape, series) the page draws: candidate per shape, or per arch; and the
    kilocycle twins that change points read."""
    out = []
    for g in GROUPS:
        for metric in g.metrics:
            out += ([(metric.value, "", a) for a in archs] if g.per_arch
                    else [(metric.value, s, Side.CANDIDATE.value) for s in shapes])
    return out + cycle_traces(shapes)


@dataclass(frozen=True)
class Flat:
    """A chart not drawn because every value it would show is zero: one sentence instead of an axis."""

    id: str
    text: str


def kernel_charts(history: KernelHistory, rules: list[RuleRow],
                  peers: dict[str, dict[tuple[str, str], float]], peak: Line | None = None,
                  flat: list[Flat] | None = None) -> list[Chart]:
    """Charts in page order. `peers`: group key -> (shape, peer) -> level; `peak`: the GPU's
    physical TFLOP/s peak (None for a GPU the peak table does not know). A group whose every value
    is zero is not charted, nor is an opcode family at zero throughout; `flat`, when given, receives
    a sentence for each."""
    by_metric: dict[str, list[SeriesHistory]] = {}
    for s in history.series:
        by_metric.setdefault(s.name, []).append(s)
    charts = []
    for g in GROUPS:
        series = [s for m in g.metrics for s in by_metric.get(m, [])]
        if not series:
            continue
        for part in _parts(g, series):
            shape = part[0].shape if g.per_shape else ""
            suffix = shape or (part[0].series if g.families else "")
            title = f"{g.title} · {suffix}" if suffix else g.title
            if all(not s.value.any() for s in part):
                if flat is not None:
                    names = ", ".join(dict.fromkeys(_label(g, s) for s in part))
                    flat.append(Flat(g.key, f"{title}: 0 in every revision shown ({names}), so not charted."))
                continue
            if g.families and (zero := [s for s in part if not s.value.any()]):
                if flat is not None:
                    names = ", ".join(_label(g, s) for s in zero)
                    flat.append(Flat(f"{g.key}-{suffix}", f"{title}: {names}: 0 in every revision shown, "
                                                          "so not drawn."))
                part = [s for s in part if s.value.any()]
            judging = _judging(g)
            if not any(row.rule in judging for row in rules):   # the newest verdict wrote no row of them:
                judging = frozenset()                             # the chart wears no verdict, accepts included
            part, labels = merge_identical(part, [_label(g, s) for s in part], judging)
            chart = HistoryChart(
                title=title, y_title=g.y_title, series=part, labels=labels,
                change_points=[change_points(history, s) for s in part],
                thresholds=_thresholds(g, rules),
                references=[Line(peer, level) for (sh, peer), level
                            in peers.get(g.key, {}).items() if sh == shape] if g.peers else [],
                unit=part[0].unit, peak=peak if g.key == PEAK_GROUP else None, reused=history.reused,
                commits=_commits(history, part),
                colors=[g.metrics.index(s.name) for s in part] if g.families else [],
                judging=judging, off_branch=_apart(history, part))
            charts.append(Chart(f"{g.key}-{suffix}" if suffix else g.key, title,
                                mark_environments(history_figure(chart), part), _marks(chart)))
    return charts


def merge_identical(part: list[SeriesHistory], labels: list[str], judging: frozenset[str] | None = None
                    ) -> tuple[list[SeriesHistory], list[str]]:
    """Series equal point for point drawn once, their legend naming all ("sm_80 = sm_90"): drawn apart,
    the later hid the earlier exactly and two legend entries showed one line. Equal means the same
    values and the same markers under `judging` (a latency fail at one shape does not tell apart two
    shapes' equal bank-conflict series)."""
    kept: list[SeriesHistory] = []
    names: list[list[str]] = []
    for s, label in zip(part, labels):
        twin = next((i for i, k in enumerate(kept) if _same_points(k, s, judging)), None)
        if twin is None:
            kept.append(s)
            names.append([label])
        else:
            names[twin].append(label)
    return kept, [" = ".join(n) for n in names]


def _same_points(a: SeriesHistory, b: SeriesHistory, judging: frozenset[str] | None) -> bool:
    return (len(a) == len(b) and a.verdicts == b.verdicts and bool((a.x == b.x).all())
            and bool((a.value == b.value).all()) and bool((a.count == b.count).all())
            and wears_verdict(a, judging) == wears_verdict(b, judging))


def _parts(g: Group, series: list[SeriesHistory]) -> list[list[SeriesHistory]]:
    """The series of each chart of `g`: one chart per shape, per arch (families), or one in all."""
    if g.per_shape:
        return [[s for s in series if s.shape == shape] for shape in dict.fromkeys(s.shape for s in series)]
    if g.families:    # `series` comes in the group's metric order, which each arch's chart keeps
        return [[s for s in series if s.series == arch] for arch in dict.fromkeys(s.series for s in series)]
    return [series]


def _apart(history: KernelHistory, part: list[SeriesHistory]) -> list[SeriesHistory]:
    """The off-branch points of the traces of `part`: drawn apart from their lines."""
    traces = {(s.name, s.shape, s.series) for s in part}
    return [s for s in history.off_branch if (s.name, s.shape, s.series) in traces]


def _commits(history: KernelHistory, part: list[SeriesHistory]) -> dict[int, str]:
    """x -> the short sha of the (newest) revision at x, for the commit axis' labels."""
    out: dict[int, str] = {}
    for s in part:
        for x, rev in zip(s.x.tolist(), s.revision_ids.tolist()):
            meta = history.details.get(rev)
            if meta is not None:
                out.setdefault(x, meta[0][:7])
    return out


def _marks(chart: HistoryChart) -> frozenset[str]:
    """What `chart` draws that the page legend must explain: `threshold`, `change`, `peak`,
    `beyond` (a value above the peak), `peer:<name>` per reference and `verdict:<verdict>` per
    verdict a point wears."""
    marks = {f"peer:{line.label}" for line in chart.references}
    marks |= {f"verdict:{v}" for s in chart.series for v, worn in zip(s.verdicts, wears_verdict(s, chart.judging))
              if worn}
    drawn = {"threshold": bool(chart.thresholds), "change": any(chart.change_points), "peak": peak_drawn(chart),
             "beyond": chart.peak is not None and any((s.value > chart.peak.value).any() for s in chart.series)}
    return frozenset(marks | {mark for mark, shown in drawn.items() if shown})


@dataclass(frozen=True)
class LegendItem:
    css: str                    # the class of its swatch in dashboards/static/gate.css
    text: str
    glyph: str = ""             # a verdict's marker as text, drawn in `color` (palette.VERDICT_MARK)
    color: str = ""
    symbol: str = ""            # the plotly marker symbol the charts draw for it


_VERDICT_WORDS = [(v, v or "no verdict") for v in ("accept", "reject", "inconclusive", "incomplete", "error", "")]


def page_legend(charts: Sequence[Chart], peak_label: str = "") -> list[LegendItem]:
    """The kernel page's legend: only the verdicts, lines and marks its charts draw; a verdict's
    swatch is the very marker the charts draw for it (`palette.VERDICT_MARK`)."""
    marks = set().union(*(c.marks for c in charts)) if charts else set()
    items = [LegendItem("glyph", text, VERDICT_MARK[v][1], VERDICT_COLOR[v], VERDICT_MARK[v][0])
             for v, text in _VERDICT_WORDS if f"verdict:{v}" in marks]
    peers = sorted(m.split(":", 1)[1] for m in marks if m.startswith("peer:"))
    lines = {"threshold": ("line threshold", "rule threshold (latest verdict)"),
             "peer": ("line reference", f"{', '.join(peers)} (median of the last 20 jobs)"),
             "change": ("line change", "change point"),
             "peak": ("line peak", peak_label or "the GPU's physical peak"),
             "beyond": ("dot beyond", "beyond the GPU's peak: not a real measurement")}
    return items + [LegendItem(*line) for mark, line in lines.items() if mark in marks or mark == "peer" and peers]


def _label(g: Group, s: SeriesHistory) -> str:
    if g.families:
        return Metric(s.name).info.label
    if g.per_arch:
        return s.series
    prefix = s.name.split("_", 1)[0] + " · " if len(g.metrics) > 1 else ""
    return prefix + (s.shape if not g.per_shape else Side.CANDIDATE.value)


def _judging(g: Group) -> frozenset[str]:
    """The rules that judge the group's figures (`rule_catalog.JUDGES`), its own rule (SASS: the
    opcodes `require_sass` reads), and for latency and throughput the latency rule, which reads
    their ratio: a point of the group wears a verdict only when one of these failed there."""
    names = {m.value for m in g.metrics}
    own = {g.rule} if g.rule is not None else set()
    timing = {Rule.MAX_LATENCY_REGRESSION_PCT} if g in _TIMING else set()
    return frozenset({r for r, judged in JUDGES.items() if judged & names} | own | timing)


def _thresholds(g: Group, rules: list[RuleRow]) -> list[Line]:
    """The latest verdict's threshold for the group's rule (latency: as a ratio of the baseline)."""
    for row in rules:
        t = row.threshold
        if g.rule is not None and row.rule == g.rule and isinstance(t, (int, float)):
            if g.rule is Rule.MAX_LATENCY_REGRESSION_PCT:
                # decide() writes the limit in µs (baseline median x (1 + pct)); the chart is a ratio.
                base = row.baseline
                if not isinstance(base, (int, float)) or base <= 0:
                    continue
                ratio = t / base
                return [Line(f"+{(ratio - 1) * 100:.3g} %", ratio)]
            return [Line("", float(t))]
    return []
