"""History charts of the kernel page: one metric over commits, with verdicts, limits, references."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gate.changepoints import ChangePoint
from gate.figures.palette import (
    CHANGE_COLOR, MUTED, PEER_COLOR, SERIES_COLOR, THRESHOLD_COLOR, VERDICT_COLOR, VERDICT_SYMBOL,
    base_layout,
)
from gate.figures.revision_table import SHARED
from gate.read_models.kernel_series import SeriesHistory

# Indexes of customdata as drawn: [revision id, sha, date, message, verdict, (count)].
HOVER = ("<b>%{customdata[1]}</b> %{customdata[2]}<br>%{customdata[3]}<br>"
         "%{y:.4g} {unit} · %{customdata[4]}{note}<extra>%{fullData.name}</extra>")
BUCKET_NOTE = " · mean of %{customdata[5]} revisions"
DIGITS = 5               # significant digits shipped; the hover shows 4


@dataclass(frozen=True)
class Line:
    """A horizontal line: a rule's threshold or a reference peer's level."""

    label: str
    value: float


@dataclass
class HistoryChart:
    title: str
    y_title: str
    series: list[SeriesHistory]
    labels: list[str]                                    # legend name per series
    change_points: list[list[ChangePoint]] = field(default_factory=list)   # per series
    thresholds: list[Line] = field(default_factory=list)
    references: list[Line] = field(default_factory=list)


def history_figure(chart: HistoryChart) -> dict:
    """Lines over commit order; markers coloured and shaped by verdict; customdata[0] = revision.

    customdata rows are [revision id, verdict, (bucket count)]: the revisions' sha, date and
    message ship once per page (`revision_table.py`) and the page puts them back before drawing.
    """
    layout = base_layout(chart.title, chart.y_title)
    layout["xaxis"]["title"] = {"text": "commit order"}
    data = []
    marked: set[float] = set()      # x of each change marker drawn
    for i, (hist, label) in enumerate(zip(chart.series, chart.labels)):
        color = SERIES_COLOR[i % len(SERIES_COLOR)]
        data.append(_series_trace(hist, label, color))
        for cp in (chart.change_points[i] if i < len(chart.change_points) else []):
            x = int(hist.x[cp.index]) - 0.5
            if x not in marked:     # the same commit moved another trace: one marker is enough
                marked.add(x)
                _change_marker(layout, x, cp)
    for line in chart.thresholds:
        _hline(layout, line, THRESHOLD_COLOR, "dash", f"limit {line.label} {line.value:g}")
    for line in chart.references:
        color = PEER_COLOR.get(line.label.split(" ")[0], MUTED)
        _hline(layout, line, color, "dot", f"{line.label} {line.value:.4g}")
    if not data:
        layout["annotations"].append({"text": "no data yet", "showarrow": False,
                                      "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5})
    return {"data": data, "layout": layout}


def _series_trace(hist: SeriesHistory, label: str, color: str) -> dict:
    """One trace straight from the series' columns: no object per point."""
    aggregated = bool((hist.count > 1).any())
    verdicts = hist.verdicts
    ids = hist.revision_ids.tolist()
    trace = {
        "type": "scatter", "mode": "lines+markers", "name": label,
        "x": hist.x.tolist(), "y": rounded(hist.value),
        "line": {"color": color, "width": 1.6},
        "marker": {"color": [VERDICT_COLOR.get(v, VERDICT_COLOR[""]) for v in verdicts],
                   "symbol": [VERDICT_SYMBOL.get(v, "circle-open") for v in verdicts],
                   "size": 5 if aggregated else 8, "line": {"width": 1, "color": "#ffffff"}},
        "customdata": (list(zip(ids, [v or "no verdict" for v in verdicts], hist.count.tolist()))
                       if aggregated else list(zip(ids, [v or "no verdict" for v in verdicts]))),
        "meta": {"revisions": SHARED},
        "hovertemplate": HOVER.replace("{unit}", hist.unit).replace(
            "{note}", BUCKET_NOTE if aggregated else ""),
    }
    if aggregated:   # the bucket's min..max as an error bar: the spread is not hidden
        trace["error_y"] = {"type": "data", "symmetric": False, "thickness": 0.8, "width": 0,
                            "color": color,
                            "array": rounded(hist.high - hist.value),
                            "arrayminus": rounded(hist.value - hist.low)}
    return trace


def _change_marker(layout: dict, x: float, cp: ChangePoint) -> None:
    layout["shapes"].append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x,
                             "y0": 0, "y1": 1, "line": {"color": CHANGE_COLOR, "width": 1.5,
                                                        "dash": "dashdot"}})
    layout["annotations"].append({
        "x": x, "y": 1.0, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,
        "text": f"change {cp.shift_pct:+.0f} %", "font": {"size": 11, "color": CHANGE_COLOR}})


def _hline(layout: dict, line: Line, color: str, dash: str, text: str) -> None:
    layout["shapes"].append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1,
                             "y0": line.value, "y1": line.value,
                             "line": {"color": color, "width": 1.2, "dash": dash}})
    layout["annotations"].append({"x": 1, "y": line.value, "xref": "paper", "yref": "y",
                                  "xanchor": "right", "yanchor": "bottom", "showarrow": False,
                                  "text": text, "font": {"size": 10, "color": color}})


def rounded(values: Sequence[float], digits: int = DIGITS) -> list[float]:
    """`values` rounded to `digits` significant digits of the largest magnitude among them.

    One step for the whole trace, so equal values stay equal and the line keeps its shape; a
    17-digit float is 3x the JSON of a 5-digit one, and a chart cannot show the difference.
    """
    a = np.asarray(values, dtype=float)
    top = float(np.max(np.abs(a))) if a.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return a.tolist()
    return np.round(a, digits - 1 - int(np.floor(np.log10(top)))).tolist()


def labels_for(series: Sequence[SeriesHistory], by: str) -> list[str]:
    """Legend names: the shape, the series or the metric, whichever tells the traces apart."""
    return [getattr(s, by) or s.series for s in series]
