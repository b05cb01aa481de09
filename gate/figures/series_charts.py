"""History charts of the kernel page: one metric over commits, with verdicts, limits, references."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gate.changepoints import ChangePoint
from gate.domain.wording import format_value
from gate.figures.axes import ValueAxis, commit_axis, fit_range, value_axis
from gate.figures.palette import (
    BEYOND_COLOR, CHANGE_COLOR, MUTED, PEAK_COLOR, PEER_COLOR, REUSED_COLOR, SERIES_COLOR, THRESHOLD_COLOR,
    VERDICT_OUTLINE, VERDICT_SYMBOL, base_layout,
)
from gate.figures.revision_table import SHARED
from gate.read_models.kernel_series import SeriesHistory

# Indexes of customdata as drawn: [revision id, sha, date, message, verdict, (count), (deciding)].
HOVER = ("<b>%{customdata[1]}</b> %{customdata[2]}<br>%{customdata[3]}<br>"
         "%{y:.4g} {unit} · %{customdata[4]}{why}{note}<extra>%{fullData.name}</extra>")
BEYOND_NOTE = "<br><b>beyond the GPU's physical peak: not a real measurement</b>"
BUCKET_NOTE = " · mean of %{customdata[5]} revisions"
REUSED_NOTE = "<br>%{customdata[5]}"   # `domain.reuse.reused_line`
DIGITS = 5               # significant digits shipped; the hover shows 4
LABEL_LINE_PX = 13       # one line of an 11-px change label, when it is raised above a neighbour
PEAK_NEAR = 0.8          # the peak is drawn as a line once the kernel's own values reach this share of it


@dataclass(frozen=True)
class Line:
    """A horizontal line: a rule's threshold or a reference peer's level."""

    label: str
    value: float


@dataclass
class HistoryChart:
    title: str
    y_title: str                                         # "{unit}" is replaced by the axis' unit
    series: list[SeriesHistory]
    labels: list[str]                                    # legend name per series
    change_points: list[list[ChangePoint]] = field(default_factory=list)   # per series
    thresholds: list[Line] = field(default_factory=list)
    references: list[Line] = field(default_factory=list)
    unit: str = ""                                       # the stored unit of every series' values
    peak: Line | None = None     # the GPU's physical peak: a value above it is not a measurement
    reused: dict[int, str] = field(default_factory=dict)   # revision id -> where its figures came from
    commits: dict[int, str] = field(default_factory=dict)   # x -> short sha, the commit axis' labels
    # Index into SERIES_COLOR per series: a series keeps its fill when another is left out (default: i).
    colors: list[int] = field(default_factory=list)
    # The rules whose verdict these series may wear (issue 45, `wears_verdict`): a reject decided by
    # latency leaves the registers or DRAM point plain (its hover still names the verdict and the row).
    judging: frozenset[str] | None = None
    # The same traces' revisions off the default branch (pull requests, other branches): markers of
    # their own, off the line, at the line place each is drawn beside (issue 45).
    off_branch: list[SeriesHistory] = field(default_factory=list)


def history_figure(chart: HistoryChart) -> dict:
    """Lines over commits; fill by series, symbol and outline by verdict; customdata[0] = revision (revision_table)."""
    lines = [*chart.thresholds, *chart.references]
    own = [v for s in (*chart.series, *chart.off_branch) for v in s.value.tolist()]
    reaches_peak = peak_drawn(chart)
    if reaches_peak:
        lines.append(chart.peak)
    values = own + [line.value for line in lines]
    axis = value_axis(values, chart.unit)
    layout = base_layout(chart.title, chart.y_title.replace("{unit}", axis.unit))
    layout["yaxis"].update(axis.layout)
    last_x = max((int(s.x.max()) for s in chart.series if len(s)), default=0)
    layout["xaxis"].update(commit_axis(last_x))
    _sha_ticks(layout["xaxis"], chart.commits, last_x)
    data = []
    changes: dict[float, tuple[ChangePoint, list[str]]] = {}   # x of a marker -> its change, the series moved
    for i, (hist, label) in enumerate(zip(chart.series, chart.labels)):
        color = SERIES_COLOR[(chart.colors[i] if i < len(chart.colors) else i) % len(SERIES_COLOR)]
        data.append(_series_trace(hist, label, color, axis, chart.judging))
        for cp in (chart.change_points[i] if i < len(chart.change_points) else []):
            # the same commit moved another trace: one marker, naming both
            changes.setdefault(int(hist.x[cp.index]) - 0.5, (cp, []))[1].append(label)
    raised = _raised_labels(sorted(changes), last_x)
    for x, (cp, moved) in changes.items():
        _change_marker(layout, x, cp, moved if len(chart.series) > 1 else [], raised=x in raised)
    data += _marked_points(chart, axis)
    data += [_off_branch_trace(hist, axis) for hist in chart.off_branch]
    data += _horizontal_lines(layout, chart, axis, reaches_peak)
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"] - 24   # tick labels
    y_range = fit_range(axis, values, plot_px)
    if y_range is not None:
        layout["yaxis"]["range"] = y_range
    if not own:
        layout["annotations"].append({"text": "no data yet", "showarrow": False,
                                      "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5})
    return {"data": data, "layout": layout}


def _horizontal_lines(layout: dict, chart: HistoryChart, axis: ValueAxis, reaches_peak: bool) -> list[dict]:
    """Draw the thresholds, the references and the GPU's peak onto `layout`; the legend entries that name them."""
    entries = []
    for line in chart.thresholds:
        text = " ".join(part for part in ("limit", line.label, _shown(line.value, chart.unit, axis)) if part)
        entries.append(_hline(layout, line, THRESHOLD_COLOR, "dash", text, axis))
    for line in chart.references:
        color = PEER_COLOR.get(line.label.split(" ")[0], MUTED)
        entries.append(_hline(layout, line, color, "dot", f"{line.label} {_shown(line.value, chart.unit, axis)}",
                              axis))
    if chart.peak is not None and reaches_peak:
        entries.append(_hline(layout, chart.peak, PEAK_COLOR, "longdash",
                              f"{chart.peak.label} {_shown(chart.peak.value, chart.unit, axis)}", axis))
    elif chart.peak is not None:
        # Said under the axis, where no line label, change label or point can be.
        name = chart.peak.label.split(" (")[0]
        # On a line of its own: beside the axis title it was cut at a half-width chart's left edge.
        layout["xaxis"]["title"]["text"] += (f"<br>{name} {_shown(chart.peak.value, chart.unit, axis)}"
                                             " is above this axis")
        layout["margin"]["b"] += 16
    return entries


def _marked_points(chart: HistoryChart, axis: ValueAxis) -> list[dict]:
    """The rings over points beyond the GPU's peak and over reused figures."""
    beyond = [_beyond_trace(hist, chart.peak, axis) for hist in chart.series] if chart.peak is not None else []
    reused = [_reused_trace(hist, chart.reused, axis) for hist in chart.series] if chart.reused else []
    rings = [t for t in reused if t is not None]
    for ring in rings[1:]:      # one legend entry for the rings, whatever the number of series
        ring["showlegend"] = False
    return [t for t in beyond if t is not None] + rings


def peak_drawn(chart: HistoryChart) -> bool:
    """Whether the GPU's peak is a line on the chart (the kernel's values come near it); otherwise it
    is named under the axis, which keeps the kernel's own range."""
    top = max((float(s.value.max()) for s in chart.series if len(s)), default=0.0)
    return chart.peak is not None and top >= chart.peak.value * PEAK_NEAR


def _shown(value: float, unit: str, axis: ValueAxis) -> str:
    """A line's value in the unit its axis is labelled in (a 2,391 µs level on an axis in ms reads
    2.391 ms); a log axis labels each tick with its own unit, so the value picks its own."""
    if axis.log or axis.factor == 1.0 and axis.unit != unit:
        return format_value(value, unit)
    return f"{value / axis.factor:.4g} {axis.unit}".rstrip()


def _sha_ticks(xaxis: dict, commits: dict[int, str], last_x: int) -> None:
    """The commit axis labelled with the short sha of the commit at each tick (oldest left)."""
    xaxis["title"] = {"text": "commit (oldest left)"}
    if not commits:
        return
    step = int(xaxis["dtick"])
    ticks = [x for x in range(0, last_x + 1, step) if x in commits]
    xaxis.update({"tickmode": "array", "tickvals": ticks, "ticktext": [commits[x] for x in ticks],
                  "tickangle": 0, "tickfont": {"size": 10}})


def _series_trace(hist: SeriesHistory, label: str, color: str, axis: ValueAxis,
                  judging: frozenset[str] | None = None) -> dict:
    """One trace straight from the series' columns: no object per point. A point that wears no
    verdict (`wears_verdict`) is a plain dot in the series' colour."""
    aggregated = bool((hist.count > 1).any())
    verdicts = hist.verdicts
    ids = hist.revision_ids.tolist()
    worn = wears_verdict(hist, judging)
    symbols = [VERDICT_SYMBOL.get(v, VERDICT_SYMBOL[""]) if w else "circle" for v, w in zip(verdicts, worn)]
    outlines = [VERDICT_OUTLINE.get(v, VERDICT_OUTLINE[""]) if w else color for v, w in zip(verdicts, worn)]
    shown = [v or "no verdict" for v in verdicts]
    why = _deciding(hist)
    trace = {
        "type": "scatter", "mode": "lines+markers", "name": label,
        "x": hist.x.tolist(), "y": rounded(axis.scale(hist.value.tolist())),
        "line": {"color": color, "width": 1.6},
        "marker": {"color": color,
                   "symbol": symbols if any(worn) else "circle",
                   "size": 6 if aggregated else [9 if w else 6 for w in worn],
                   "line": {"width": 1.5, "color": outlines if any(worn) else color}},
        "customdata": (list(zip(ids, shown, hist.count.tolist(), why)) if aggregated
                       else list(zip(ids, shown, why))),
        "meta": {"revisions": SHARED},
        "hovertemplate": _hover(axis, BUCKET_NOTE if aggregated else "", 6 if aggregated else 5),
    }
    if aggregated:   # the bucket's min..max as an error bar: the spread is not hidden
        trace["error_y"] = {"type": "data", "symmetric": False, "thickness": 0.8, "width": 0,
                            "color": color,
                            "array": rounded(axis.scale((hist.high - hist.value).tolist())),
                            "arrayminus": rounded(axis.scale((hist.value - hist.low).tolist()))}
    return trace


def wears_verdict(hist: SeriesHistory, judging: frozenset[str] | None) -> list[bool]:
    """Per point, whether it is drawn with its verdict's marker: with `judging` None, every point;
    with none, no point; else an accept (or no verdict) always, and any other verdict only where a
    rule that gave it (`hist.failed`) is one of `judging`."""
    if judging is None:
        return [True] * len(hist)
    if not judging:
        return [False] * len(hist)
    failed = hist.failed or [()] * len(hist)
    return [v in ("", "accept") or not judging.isdisjoint(f) for v, f in zip(hist.verdicts, failed)]


def _deciding(hist: SeriesHistory) -> list[str]:
    """Per point, the hover's words after its verdict: " by <the deciding row>", or nothing."""
    return [f" by {d}" if d else "" for d in hist.deciding] if hist.deciding else [""] * len(hist)


def _hover(axis: ValueAxis, note: str, why: int | None = None) -> str:
    """The hover of a trace whose customdata (as drawn) holds the deciding row's words at `why`."""
    return HOVER.replace("{unit}", axis.unit).replace("{note}", note).replace(
        "{why}", f"%{{customdata[{why}]}}" if why is not None else "")


def _off_branch_trace(hist: SeriesHistory, axis: ValueAxis) -> dict:
    """Revisions off the default branch: hollow markers, no line, named as such; a click opens each."""
    ids, verdicts = hist.revision_ids.tolist(), [v or "no verdict" for v in hist.verdicts]
    return {"type": "scatter", "mode": "markers", "name": f"off the branch (PRs, other branches) · {hist.series}",
            "x": hist.x.tolist(), "y": rounded(axis.scale(hist.value.tolist())),
            "marker": {"symbol": "diamond-open", "size": 10, "color": MUTED, "line": {"width": 1.5, "color": MUTED}},
            "customdata": list(zip(ids, verdicts, _deciding(hist))), "meta": {"revisions": SHARED},
            "hovertemplate": _hover(axis, "", 5)}


def _beyond_trace(hist: SeriesHistory, peak: Line, axis: ValueAxis) -> dict | None:
    """The points of `hist` above the physical peak, ringed: no kernel can run there, so each
    is a measurement the kernel fooled (work hidden from the timer), not a fast kernel."""
    over = (hist.value > peak.value).nonzero()[0].tolist()
    ids, verdicts = hist.revision_ids.tolist(), hist.verdicts
    return _rings(hist, over, "beyond the GPU's peak", ("circle-open", 18, 2.5), BEYOND_COLOR,
                  [(ids[i], verdicts[i] or "no verdict") for i in over], BEYOND_NOTE, axis)


def _reused_trace(hist: SeriesHistory, reused: dict[int, str], axis: ValueAxis) -> dict | None:
    """The points of `hist` whose revision took an earlier job's figures, ringed in grey (dotted),
    with the origin in the hover: a flat stretch of reused points is one measurement, not many."""
    ids, verdicts, counts = hist.revision_ids.tolist(), hist.verdicts, hist.count.tolist()
    hits = [i for i, rev in enumerate(ids) if rev in reused and counts[i] == 1]
    return _rings(hist, hits, "reused from an earlier job", ("circle-open-dot", 14, 1.5), REUSED_COLOR,
                  [(ids[i], verdicts[i] or "no verdict", reused[ids[i]]) for i in hits], REUSED_NOTE, axis)


def _rings(hist: SeriesHistory, at: list[int], name: str, mark: tuple[str, int, float], color: str,
           customdata: list[tuple], note: str, axis: ValueAxis) -> dict | None:
    """A trace of markers `mark` (symbol, size, line width) over the points `at` of `hist`; None for none."""
    if not at:
        return None
    symbol, size, width = mark
    return {"type": "scatter", "mode": "markers", "name": name,
            "x": [int(hist.x[i]) for i in at], "y": rounded(axis.scale([float(hist.value[i]) for i in at])),
            "marker": {"symbol": symbol, "size": size, "color": color, "line": {"width": width, "color": color}},
            "customdata": customdata, "meta": {"revisions": SHARED}, "hovertemplate": _hover(axis, note)}


def _raised_labels(xs: list[float], last_x: int) -> set[float]:
    """Which of the change labels at `xs` (ascending) go one line higher: labels of nearby commits
    take turns, so they never overlap. Decided on the positions, before any becomes layout."""
    near = max(last_x, 1) / 6
    raised: set[float] = set()
    for before, after in zip(xs, xs[1:]):
        if after - before < near and before not in raised:
            raised.add(after)
    return raised


def _change_marker(layout: dict, x: float, cp: ChangePoint, moved: list[str], *, raised: bool) -> None:
    """A dashed line before the commit that moved, labelled with the shift and, on a chart of several
    series, the series that moved ("change +4 % (sm_90)"): which of five lines moved is not guessed."""
    layout["shapes"].append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x,
                             "y0": 0, "y1": 1, "line": {"color": CHANGE_COLOR, "width": 1.5,
                                                        "dash": "dashdot"}})
    label = {"x": x, "y": 1.0, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,
             "text": f"change {cp.shift_pct:+.0f} %" + (f" ({', '.join(moved)})" if moved else ""), "font": {"size": 11, "color": CHANGE_COLOR}}
    if raised:
        label["yshift"] = LABEL_LINE_PX
    layout["annotations"].append(label)


def _hline(layout: dict, line: Line, color: str, dash: str, text: str, axis: ValueAxis) -> dict:
    """A horizontal line across the plot, and the legend entry that names it (a swatch of its dash,
    no points). Written in the plot, at either end, a label covered the newest or the oldest points;
    in the right margin, the legend."""
    y = line.value / axis.factor
    layout["shapes"].append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1,
                             "y0": y, "y1": y, "line": {"color": color, "width": 1.2, "dash": dash}})
    return {"type": "scatter", "x": [None], "y": [None], "mode": "lines", "name": text, "hoverinfo": "skip",
            "line": {"color": color, "width": 1.2, "dash": dash}, "showlegend": True}


def rounded(values: Sequence[float], digits: int = DIGITS) -> list[float]:
    """`values` rounded to `digits` significant digits of the largest magnitude among them: one step for
    the whole trace, so equal values stay equal; a 17-digit float is 3x the JSON of a 5-digit one."""
    a = np.asarray(values, dtype=float)
    top = float(np.max(np.abs(a))) if a.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return a.tolist()
    return np.round(a, digits - 1 - int(np.floor(np.log10(top)))).tolist()
