"""History charts of the kernel page: one metric over commits, with verdicts, limits, references."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

import numpy as np

from gate.changepoints import ChangePoint
from gate.figures.palette import (
    CHANGE_COLOR, MUTED, PEER_COLOR, SERIES_COLOR, THRESHOLD_COLOR, VERDICT_COLOR, VERDICT_SYMBOL,
    base_layout,
)
from gate.storage.history import SeriesHistory

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
    """Lines over commit order; markers coloured and shaped by verdict; customdata[0] = revision."""
    layout = base_layout(chart.title, chart.y_title)
    layout["xaxis"]["title"] = {"text": "commit order"}
    data = []
    for i, (hist, label) in enumerate(zip(chart.series, chart.labels)):
        color = SERIES_COLOR[i % len(SERIES_COLOR)]
        data.append(_series_trace(hist, label, color))
        for cp in (chart.change_points[i] if i < len(chart.change_points) else []):
            _change_marker(layout, hist, cp, color)
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
    pts = hist.points
    aggregated = any(p.count > 1 for p in pts)
    trace = {
        "type": "scatter", "mode": "lines+markers", "name": label,
        "x": [p.x for p in pts], "y": rounded([p.value for p in pts]),
        "line": {"color": color, "width": 1.6},
        "marker": {"color": [VERDICT_COLOR.get(p.verdict, VERDICT_COLOR[""]) for p in pts],
                   "symbol": [VERDICT_SYMBOL.get(p.verdict, "circle-open") for p in pts],
                   "size": 5 if aggregated else 8, "line": {"width": 1, "color": "#ffffff"}},
        "customdata": [[p.revision_id, p.sha[:8],
                        _when(p.committed_at),
                        _short(p.message), p.verdict or "no verdict",
                        *([p.count] if aggregated else [])] for p in pts],
        "hovertemplate": HOVER.replace("{unit}", hist.unit).replace(
            "{note}", BUCKET_NOTE if aggregated else ""),
    }
    if aggregated:   # the bucket's min..max as an error bar: the spread is not hidden
        trace["error_y"] = {"type": "data", "symmetric": False, "thickness": 0.8, "width": 0,
                            "color": color,
                            "array": rounded([p.high - p.value for p in pts]),
                            "arrayminus": rounded([p.value - p.low for p in pts])}
    return trace


def _change_marker(layout: dict, hist: SeriesHistory, cp: ChangePoint, color: str) -> None:
    x = hist.points[cp.index].x - 0.5
    if any(a.get("x") == x and a["text"].startswith("change") for a in layout["annotations"]):
        return   # the same commit moved another trace of this chart: one marker is enough
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


@lru_cache(maxsize=4096)
def _when(at: datetime | None) -> str:
    """Commit date for the hover; cached because a kernel page's twenty traces share revisions."""
    return at.strftime("%Y-%m-%d %H:%M") if at else ""


def _short(message: str, limit: int = 72) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def labels_for(series: Sequence[SeriesHistory], by: str) -> list[str]:
    """Legend names: the shape, the series or the metric, whichever tells the traces apart."""
    return [getattr(s, by) or s.series for s in series]
