"""Figure builders: valid plotly JSON, verdict markers, change points, thresholds, references."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from gate.domain.names import Metric
from gate.domain.results import FunctionResources, KernelMetrics, ShapeTiming, TimingSamples
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.figures.series_charts import HistoryChart, Line, history_figure
from gate.figures.kernel_page import kernel_charts
from gate.figures.revision import ncu_figure, sass_figure, timing_figure
from gate.read_models.kernel_series import KernelHistory, SeriesHistory


def _series(values: list[float], verdicts: list[str], name: str = "latency_median_us",
            shape: str = "b1_h8_s512_d64") -> SeriesHistory:
    n = len(values)
    v = np.asarray(values, dtype=float)
    return SeriesHistory(name, shape, "candidate", "us", np.arange(n), 100 + np.arange(n), v, v, v,
                         np.ones(n, dtype=np.int64), list(verdicts))


def _samples(us: list[float]) -> TimingSamples:
    return TimingSamples(us, sorted(us)[len(us) // 2], min(us), max(us))


def _function(arch: str, opcodes: dict[str, int]) -> FunctionResources:
    return FunctionResources("_Z1kv", arch, 64, 0, 0, 0, 0, opcodes)


def test_history_figure_is_valid_plotly_with_verdict_markers_and_revision_ids():
    s = _series([58.0, 64.0, 45.0], ["accept", "reject", "inconclusive"])
    fig = history_figure(HistoryChart("Latency", "µs", [s], ["candidate"]))
    go.Figure(fig)   # raises on any property plotly does not know
    trace = fig["data"][0]
    assert trace["marker"]["symbol"] == ["circle", "x", "diamond"]
    assert [c[0] for c in trace["customdata"]] == [100, 101, 102]
    assert [c[1] for c in trace["customdata"]] == ["accept", "reject", "inconclusive"]
    assert trace["meta"] == {"revisions": "shared"}    # sha, date, message come from the table


def test_history_figure_draws_thresholds_references_and_change_points():
    s = _series([58.0] * 12 + [46.0] * 12, ["accept"] * 24)
    from gate.changepoints import detect
    fig = history_figure(HistoryChart("Latency", "µs", [s], ["candidate"],
                                      change_points=[detect(s.value)],
                                      thresholds=[Line("", 60.0)],
                                      references=[Line("sdpa_flash", 31.0)]))
    texts = [a["text"] for a in fig["layout"]["annotations"]]
    names = [t["name"] for t in fig["data"]]            # each line named by a legend entry of its dash
    assert "change -21 %" in texts
    assert "limit 60" in names and "limit 60" not in texts
    assert "sdpa_flash 31" in names


def test_kernel_charts_split_latency_per_shape_and_use_the_latest_rule_thresholds():
    a = _series([58.0] * 10, ["accept"] * 10)
    b = _series([2350.0] * 10, ["accept"] * 10, shape="b4_h16_s4096_d64_causal")
    ratio = _series([1.0] * 10, ["accept"] * 10, name="latency_ratio")
    hist = KernelHistory("flashcore_wmma", "H100", 10, 1, [a, b, ratio])
    # As decide() writes the row: the limit in µs, baseline median x 1.03.
    rules = [RuleRow("max_latency_regression_pct", RuleOutcome.PASS, "+0.0 %", threshold=59.74, baseline=58.0)]
    charts = kernel_charts(hist, rules, {"latency": {("b1_h8_s512_d64", "sdpa_flash"): 31.0}})
    assert [c.id for c in charts] == ["latency-b1_h8_s512_d64", "latency-b4_h16_s4096_d64_causal",
                                      "ratio"]
    ratio_fig = charts[2].figure
    assert ratio_fig["layout"]["shapes"][0]["y0"] == pytest.approx(1.03)
    refs = [t["name"] for t in charts[0].figure["data"]]     # lines are named in the legend
    assert "sdpa_flash 31 µs" in refs
    assert not [t for t in charts[1].figure["data"] if t["name"].startswith("sdpa")]   # that shape has no peer stored


def test_timing_figure_has_a_box_per_side_and_peer():
    timing = ShapeTiming("s", "float16", _samples([1.0, 1.1]), _samples([1.0, 1.05]),
                         {"sdpa_flash": _samples([0.8, 0.82])}, ratio=1.01, ratio_ci_low=1.0, ratio_ci_high=1.02)
    fig = timing_figure(timing)
    go.Figure(fig)
    assert [t["name"] for t in fig["data"]] == ["candidate", "baseline", "sdpa_flash"]
    assert "1.010 [1.000, 1.020]" in fig["layout"]["title"]["text"]


def test_ncu_and_sass_figures_are_valid_plotly():
    ncu = ncu_figure([KernelMetrics("k", shape="s", tensor_pipe_pct=48.0, dram_pct=None)],
                     [KernelMetrics("k", shape="s", tensor_pipe_pct=34.0)])
    sass = sass_figure([_function("sm_90", {"HMMA": 384, "LDSM": 96})])
    go.Figure(ncu)
    go.Figure(sass)
    assert [t["name"] for t in ncu["data"]] == ["baseline", "candidate"]
    assert sass["data"][0]["x"] == ["HMMA", "LDSM"]


def test_rounded_keeps_significant_digits_of_the_largest_value():
    from gate.figures.series_charts import rounded
    assert rounded([57.741063834676616, 2350.123456, 0.0]) == [57.7, 2350.1, 0.0]
    assert rounded([0.0123456, 0.00101]) == [0.012346, 0.00101]
    assert rounded([]) == []
    assert rounded([0.0, 0.0]) == [0.0, 0.0]


def test_aggregated_points_carry_their_count_for_the_hover():
    s = SeriesHistory("x", "", "candidate", "us", np.arange(3), 100 + np.arange(3),
                      np.full(3, 5.0), np.full(3, 4.0), np.full(3, 6.0), np.full(3, 25),
                      ["accept"] * 3)
    fig = history_figure(HistoryChart("Latency", "µs", [s], ["candidate"]))
    go.Figure(fig)
    trace = fig["data"][0]
    assert list(trace["customdata"][0]) == [100, "accept", 25, ""]   # customdata[5] once drawn
    assert "mean of %{customdata[5]} revisions" in trace["hovertemplate"]
    assert "%{customdata[6]}" in trace["hovertemplate"]             # the deciding row, after the count
    assert trace["error_y"]["array"] == [1.0, 1.0, 1.0]


def test_a_change_shared_by_two_traces_is_marked_once():
    a = _series([58.0] * 12 + [46.0] * 12, ["accept"] * 24)
    b = _series([30.0] * 12 + [20.0] * 12, ["accept"] * 24, shape="b4")
    from gate.changepoints import detect
    fig = history_figure(HistoryChart("Latency", "µs", [a, b], ["a", "b"],
                                      change_points=[detect(a.value), detect(b.value)]))
    texts = [t["text"] for t in fig["layout"]["annotations"]]
    assert texts == ["change -21 % (a, b)"]          # one marker, naming both series it moved
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [11.5]


def test_labels_of_nearby_changes_take_turns_one_line_higher():
    from gate.changepoints import ChangePoint
    s = _series([50.0] * 60, ["accept"] * 60)
    # x 9.5, 11.5, 13.5 are near (under a sixth of the axis apart), 49.5 is far from them
    changes = [ChangePoint(i, 50.0, 50.0 + i) for i in (10, 12, 14, 50)]
    fig = history_figure(HistoryChart("Latency", "µs", [s], ["candidate"], change_points=[changes]))
    labels = [(a["x"], a.get("yshift", 0)) for a in fig["layout"]["annotations"] if a["text"].startswith("change")]
    assert labels == [(9.5, 0), (11.5, 13), (13.5, 0), (49.5, 0)]


def test_sass_figure_has_one_trace_per_arch_however_many_instantiations():
    functions = [_function(arch, {"HMMA": 10, "LDSM": i}) for arch in ("sm_80", "sm_90") for i in range(16)]
    fig = sass_figure(functions)
    assert [t["name"] for t in fig["data"]] == ["sm_80 (16 functions)", "sm_90 (16 functions)"]
    assert fig["data"][0]["x"] == ["HMMA", "LDSM"] and fig["data"][0]["y"] == [160, sum(range(16))]


def test_figures_read_attributes_so_a_renamed_field_fails_loudly():
    """Figures take the domain's types: a dict (the stored JSON, or a field under an old name) is an
    error, not a chart with silently missing values."""
    with pytest.raises(AttributeError):
        timing_figure({"shape": "s", "candidate": {"samples_us": [1.0]}})
    with pytest.raises(AttributeError):
        ncu_figure([{"shape": "s", "tensor_pipe_pct": 48.0}], [])
    with pytest.raises(AttributeError):
        kernel_charts(KernelHistory("k", "H100", 1, 1, [_series([1.0], ["accept"])]),
                      [{"rule": "max_latency_regression_pct", "threshold": 59.74}], {})


def _arch_series(name: str, arch: str, values: list[float]) -> SeriesHistory:
    n = len(values)
    v = np.asarray(values, dtype=float)
    return SeriesHistory(name, "", arch, "instructions", np.arange(n), 100 + np.arange(n), v, v, v,
                         np.ones(n, dtype=np.int64), ["accept"] * n)


def test_sass_opcodes_chart_one_chart_per_arch_a_series_per_family_and_say_the_absent_ones():
    from gate.figures.kernel_page import Flat
    from gate.figures.palette import SERIES_COLOR
    from gate.nvidia.sass_families import SASS_METRICS

    counts = {"sass_tensor_core": 384, "sass_shared": 260, "sass_global": 32, "sass_async_copy": 0,
              "sass_barrier": 18, "sass_shuffle": 0, "sass_total": 1500}
    # sm_90 reads the same but grows an ldmatrix (shared +96) halfway; sm_80 has no tensor core code.
    series = [_arch_series(name, arch, [v + (96 if arch == "sm_90" and name == "sass_shared" and i >= 2 else 0)
                                        for i in range(4)] if not (arch == "sm_80" and name == "sass_tensor_core")
                           else [0.0] * 4)
              for arch in ("sm_80", "sm_90") for name, v in counts.items()]
    flat: list[Flat] = []
    charts = kernel_charts(KernelHistory("k", "H100", 4, 1, series), [], {}, flat=flat)
    assert [(c.id, c.title) for c in charts] == [("sass-sm_80", "SASS opcodes · sm_80"),
                                                 ("sass-sm_90", "SASS opcodes · sm_90")]
    sm80, sm90 = (c.figure for c in charts)
    go.Figure(sm90)
    names = [t["name"] for t in sm90["data"] if t.get("showlegend", True)]
    assert names == ["tensor core", "shared memory", "global memory", "barriers", "all instructions"]
    assert [t["y"] for t in sm90["data"]][1] == [260, 260, 356, 356]           # absolute counts
    assert sm90["layout"]["yaxis"]["title"]["text"] == "instructions (all functions)"
    # A family keeps its fill whatever else is left out: barriers are SASS_METRICS' fifth colour in both.
    fill = {c.id: {t["name"]: t["marker"]["color"] for t in c.figure["data"]} for c in charts}
    barrier = SERIES_COLOR[SASS_METRICS.index(Metric.SASS_BARRIER)]
    assert fill["sass-sm_80"]["barriers"] == fill["sass-sm_90"]["barriers"] == barrier
    assert "tensor core" not in fill["sass-sm_80"]
    assert [(f.id, f.text) for f in flat] == [
        ("sass-sm_80", "SASS opcodes · sm_80: tensor core, async copies, shuffles: 0 in every revision shown, "
                       "so not drawn."),
        ("sass-sm_90", "SASS opcodes · sm_90: async copies, shuffles: 0 in every revision shown, so not drawn.")]
