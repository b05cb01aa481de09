"""Reused points are drawn distinctly: ringed, named in the legend, with their origin in the hover."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from gate.domain.reuse import reused_line
from gate.figures.series_charts import HistoryChart, history_figure
from gate.read_models.kernel_series import SeriesHistory


def _series(values: list[float], count: int = 1) -> SeriesHistory:
    v = np.asarray(values, dtype=float)
    n = v.size
    return SeriesHistory("latency_median_us", "s", "candidate", "us", np.arange(n), 100 + np.arange(n), v, v, v,
                         np.full(n, count, dtype=np.int64), ["accept"] * n)


def test_reused_revisions_are_ringed_with_where_their_figures_came_from():
    line = reused_line("ab" * 20, 7, "2026-11-25T23:10:00")
    fig = history_figure(HistoryChart("Latency", "{unit}", [_series([50.0, 50.0, 61.0])], ["candidate"],
                                      reused={101: line}))
    go.Figure(fig)                                     # valid plotly
    (ring,) = [t for t in fig["data"] if t["name"] == "reused from an earlier job"]
    assert ring["x"] == [1] and ring["customdata"] == [(101, "accept", line)]
    assert "%{customdata[5]}" in ring["hovertemplate"]   # after gate.js puts back sha, date, message
    assert line == "reused from abababababab job 7, 2026-11-25 23:10 UTC"


def test_a_history_without_reuse_draws_no_ring_and_buckets_are_never_ringed():
    plain = history_figure(HistoryChart("Latency", "{unit}", [_series([50.0, 51.0])], ["candidate"]))
    bucketed = history_figure(HistoryChart("Latency", "{unit}", [_series([50.0, 51.0], count=4)], ["candidate"],
                                           reused={100: "reused from x job 1, 2026-11-25 23:10 UTC"}))
    for fig in (plain, bucketed):
        assert [t["name"] for t in fig["data"]] == ["candidate"]


def test_the_rings_of_several_series_share_one_legend_entry():
    fig = history_figure(HistoryChart("Latency", "{unit}", [_series([50.0, 50.0]), _series([60.0, 60.0])],
                                      ["s1", "s2"], reused={101: "reused from x job 1, 2026-11-25 23:10 UTC"}))
    rings = [t for t in fig["data"] if t["name"] == "reused from an earlier job"]
    assert len(rings) == 2 and [t.get("showlegend", True) for t in rings] == [True, False]
