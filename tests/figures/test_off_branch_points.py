"""Revisions off the default branch are drawn apart from the line (issue 45): markers of their own,
named as such, never joined to the line nor searched for change points."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from gate.figures.kernel_page import kernel_charts
from gate.read_models.kernel_series import KernelHistory, SeriesHistory


def _series(x: list[int], ids: list[int], values: list[float]) -> SeriesHistory:
    v = np.asarray(values, dtype=float)
    return SeriesHistory("latency_median_us", "s1", "candidate", "us", np.asarray(x), np.asarray(ids), v, v, v,
                         np.ones(v.size, dtype=np.int64), ["accept"] * v.size)


def test_a_pull_requests_point_is_its_own_trace_beside_the_line():
    line = _series([0, 1, 2], [11, 12, 13], [29.0, 30.0, 40.0])
    apart = _series([1], [14], [99.0])
    details = {i: (f"{i:040x}", None, "m") for i in (11, 12, 13, 14)}
    history = KernelHistory("k", "H100", 4, 1, [line], details, off_branch=[apart])
    (latency,) = [c for c in kernel_charts(history, [], {}) if c.id.startswith("latency")]
    go.Figure(latency.figure)
    traces = {t["name"]: t for t in latency.figure["data"]}
    (name,) = [n for n in traces if n.startswith("off the branch")]
    assert traces[name]["mode"] == "markers" and traces[name]["x"] == [1]
    assert [c[0] for c in traces[name]["customdata"]] == [14]
    (drawn,) = [t for n, t in traces.items() if n != name]
    assert drawn["x"] == [0, 1, 2] and [c[0] for c in drawn["customdata"]] == [11, 12, 13]
