"""Axes that fit their values: whole commits, units a person reads, log scales across decades,
nothing below zero, whole steps for whole quantities, labels of nearby lines kept apart (issue 13)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from gate.figures.axes import commit_axis, value_axis
from gate.figures.series_charts import HistoryChart, Line, history_figure
from gate.read_models.kernel_series import SeriesHistory


def _series(values: list[float], unit: str, name: str = "m", series: str = "candidate") -> SeriesHistory:
    v = np.asarray(values, dtype=float)
    n = v.size
    return SeriesHistory(name, "s", series, unit, np.arange(n), 100 + np.arange(n), v, v, v,
                         np.ones(n, dtype=np.int64), ["accept"] * n)


def test_the_commit_axis_has_whole_ticks_only():
    for last in (1, 3, 7, 60, 9999):
        axis = commit_axis(last)
        assert axis["dtick"] >= 1 and axis["dtick"] == int(axis["dtick"]) and axis["tickformat"] == "d"


def test_latency_in_ms_reads_in_ms_and_decades_go_on_a_log_axis():
    assert (value_axis([41_000.0, 43_000.0], "us").unit, value_axis([41_000.0, 43_000.0], "us").factor) == ("ms", 1e3)
    axis = value_axis([9.0, 310.0, 41_000.0], "us")
    assert axis.log and axis.layout["type"] == "log"
    assert "10 µs" in axis.layout["ticktext"] and "10 ms" in axis.layout["ticktext"]


def test_a_flat_whole_quantity_gets_whole_steps_from_zero_not_minus_one_to_one():
    layout = value_axis([0.0, 0.0, 0.0], "B").layout
    assert layout["range"][0] == 0 and layout["dtick"] == 1
    fig = history_figure(HistoryChart("Spills", "bytes ({unit})", [_series([0, 0, 0], "B")], ["sm_90"],
                                      thresholds=[Line("", 0.0)], unit="B"))
    go.Figure(fig)
    assert fig["layout"]["yaxis"]["range"][0] >= 0
    assert fig["layout"]["xaxis"]["dtick"] == 1


def test_a_value_beyond_the_gpus_peak_is_ringed_and_named():
    s = _series([250.0, 260.0, 400_000.0, 255.0], "TFLOP/s", name="tflops")
    fig = history_figure(HistoryChart("Throughput", "{unit}", [s], ["candidate"], unit="TFLOP/s",
                                      peak=Line("H200 peak", 989.4)))
    go.Figure(fig)
    beyond = [t for t in fig["data"] if t["name"] == "beyond the GPU's peak"]
    assert len(beyond) == 1 and beyond[0]["x"] == [2] and beyond[0]["customdata"][0][0] == 102
    assert "not a real measurement" in beyond[0]["hovertemplate"]
    assert fig["layout"]["yaxis"]["type"] == "log"          # 250 and 400k both readable
    assert any("H200 peak 989.4 TFLOP/s" == t["name"] for t in fig["data"])    # its line's legend entry
