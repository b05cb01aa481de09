"""One palette for figures and CSS: verdict colours and marker symbols, series colours, fonts."""

from __future__ import annotations

from gate.domain.names import Side
from gate.domain.verdict import Verdict

FONT = "Inter, 'Segoe UI', system-ui, -apple-system, sans-serif"
INK = "#1f2933"
MUTED = "#6b7785"
GRID = "#e6e9ee"

# A verdict is told by the marker's symbol (and its outline in the verdict's colour), a series by the
# marker's fill: two channels that never compete, and symbols read in grey print and for colour-blind
# readers. Keyed by the stored strings ("" = no verdict stored); a `Verdict` looks up the same entry.
# `glyph` is the same shape as text, for the page legend: both come from this one table.
VERDICT_COLOR = {Verdict.ACCEPT.value: "#1a7f37", Verdict.REJECT.value: "#cf222e",
                 Verdict.INCONCLUSIVE.value: "#b07d00", Verdict.INCOMPLETE.value: "#6e7781",
                 Verdict.ERROR.value: "#8250df", "": "#9aa4b1"}
VERDICT_MARK = {Verdict.ACCEPT.value: ("circle", "\u25cf"), Verdict.REJECT.value: ("x", "\u2716"),
                Verdict.INCONCLUSIVE.value: ("diamond", "\u25c6"),
                Verdict.INCOMPLETE.value: ("square-open", "\u25a1"), Verdict.ERROR.value: ("star", "\u2605"),
                "": ("circle-open", "\u25cb")}
VERDICT_SYMBOL = {verdict: symbol for verdict, (symbol, _) in VERDICT_MARK.items()}
# The outline a marker gets: accept is the usual case and keeps the series' own colour clean (a thin
# white ring); every other verdict is ringed in its colour.
VERDICT_OUTLINE = {**VERDICT_COLOR, Verdict.ACCEPT.value: "#ffffff"}

# Series: the Okabe-Ito palette (Okabe & Ito, "Color Universal Design", 2008), distinct for the common
# colour-vision deficiencies; its yellow is left out (unreadable on white).
SERIES_COLOR = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000"]
PEER_COLOR = {"sdpa_flash": "#ea580c", "sdpa_cudnn": "#0d9488", "sdpa_efficient": "#a16207",
              "cublas": "#0d9488"}
SIDE_COLOR = {Side.CANDIDATE.value: "#2563eb", Side.BASELINE.value: "#94a3b8"}
THRESHOLD_COLOR = "#cf222e"
PEAK_COLOR = "#111827"         # the GPU's physical peak
BEYOND_COLOR = "#cf222e"       # a value beyond that peak
REUSED_COLOR = "#8c959f"       # a point whose figures an earlier job measured (docs/reuse.md)
CHANGE_COLOR = "#7c3aed"

# plotly draws its mode bar in the top 30 px of a chart, right-aligned, over whatever is there: the
# title starts below it (a long title reached under it), and the top margin makes room for both
# and for the change labels above the plot.
MODEBAR_PX = 30


def base_layout(title: str, y_title: str, *, height: int = 336) -> dict:
    return {
        "title": {"text": title, "x": 0.01, "xanchor": "left", "y": 1, "yref": "container", "yanchor": "top",
                  "pad": {"t": MODEBAR_PX}, "font": {"size": 15, "color": INK}},
        "font": {"family": FONT, "size": 12, "color": INK},
        "height": height,
        # Title on top, change markers just above the plot, the legend on the right (outside the
        # plot, so it never covers a tick label or an axis title); plotly widens the margin for it.
        "margin": {"l": 64, "r": 24, "t": MODEBAR_PX + 48, "b": 56},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "xaxis": {"gridcolor": GRID, "zeroline": False, "linecolor": GRID, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "gridcolor": GRID, "zeroline": False,
                  "linecolor": GRID, "automargin": True},
        "legend": {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top",
                   "font": {"size": 11}},
        "shapes": [],
        "annotations": [],
    }
