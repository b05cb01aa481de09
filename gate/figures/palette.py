"""One palette for figures and CSS: verdict colours and marker symbols, series colours, fonts."""

from __future__ import annotations

from gate.domain.names import Side
from gate.domain.verdict import Verdict

FONT = "Inter, 'Segoe UI', system-ui, -apple-system, sans-serif"
INK = "#1f2933"
MUTED = "#6b7785"
GRID = "#e6e9ee"

# Distinct by colour *and* symbol, so they read in grey print and for colour-blind readers.
# Keyed by the stored strings ("" = no verdict stored); a `Verdict` looks up the same entry.
VERDICT_COLOR = {Verdict.ACCEPT.value: "#1a7f37", Verdict.REJECT.value: "#cf222e",
                 Verdict.INCONCLUSIVE.value: "#b07d00", Verdict.INCOMPLETE.value: "#6e7781",
                 Verdict.ERROR.value: "#8250df", "": "#9aa4b1"}
VERDICT_SYMBOL = {Verdict.ACCEPT.value: "circle", Verdict.REJECT.value: "x",
                  Verdict.INCONCLUSIVE.value: "diamond", Verdict.INCOMPLETE.value: "square-open",
                  Verdict.ERROR.value: "star", "": "circle-open"}

SERIES_COLOR = ["#2563eb", "#0891b2", "#7c3aed", "#db2777", "#ea580c", "#65a30d"]
PEER_COLOR = {"sdpa_flash": "#ea580c", "sdpa_cudnn": "#0d9488", "sdpa_efficient": "#a16207",
              "cublas": "#0d9488"}
SIDE_COLOR = {Side.CANDIDATE.value: "#2563eb", Side.BASELINE.value: "#94a3b8"}
THRESHOLD_COLOR = "#cf222e"
PEAK_COLOR = "#111827"         # the GPU's physical peak
BEYOND_COLOR = "#cf222e"       # a value beyond that peak
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
