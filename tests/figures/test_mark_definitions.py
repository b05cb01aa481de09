"""Issue 28's marks, pure: the revision page's folded rule rows, the compare page's changes in an
engineer's units coloured by the judging rule's bound, and kernel charts whose axes, peak, markers
and legend say what they mean."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import plotly.graph_objects as go

from gate.domain.verdict import RuleOutcome, RuleRow
from gate.figures.kernel_page import Flat, kernel_charts, page_legend
from gate.figures.palette import SERIES_COLOR, VERDICT_MARK
from gate.figures.revision import compare_figure
from gate.figures.rule_table import rule_table
from gate.figures.series_charts import HistoryChart, Line, history_figure
from gate.read_models.compare import CompareRow
from gate.read_models.kernel_series import KernelHistory, SeriesHistory


def _series(values: list[float], verdicts: list[str], name: str = "tflops", series: str = "candidate",
            unit: str = "TFLOP/s", shape: str = "s1", failed: list[tuple[str, ...]] | None = None) -> SeriesHistory:
    n = len(values)
    v = np.asarray(values, dtype=float)
    return SeriesHistory(name, shape, series, unit, np.arange(n), 100 + np.arange(n), v, v, v,
                         np.ones(n, dtype=np.int64), list(verdicts), failed=failed or [])


def test_the_deciding_row_leads_and_unchanged_passing_rows_fold_into_one_line_per_rule():
    rows = [RuleRow("max_registers", RuleOutcome.PASS, "96 within 128", value=96, threshold=128, baseline=96, delta=0),
            RuleRow("max_registers", RuleOutcome.PASS, "96 within 128", value=96, threshold=128, baseline=96, delta=0),
            RuleRow("max_registers_increase", RuleOutcome.PASS,
                    "31 instances unchanged (sm_90): equal to the baseline's", delta=0),
            RuleRow("max_latency_regression_pct", RuleOutcome.PASS, "+0.4 %", value=10.04, baseline=10.0, delta=0.04),
            RuleRow("max_latency_regression_pct", RuleOutcome.FAIL, "+12 %", value=11.2, baseline=10.0, delta=1.2,
                    decisive=True),
            RuleRow("min_tensor_pipe_pct", RuleOutcome.NOT_RUN, "no profile")]
    table = rule_table(rows)
    assert [r.outcome for r in table.shown] == [RuleOutcome.FAIL, RuleOutcome.NOT_RUN, RuleOutcome.PASS]
    assert table.shown[0].decisive
    folded = {f.rule: f for f in table.folded}
    assert folded["max_registers"].count == 2 and folded["max_registers"].text == "2 instances unchanged, all pass"
    assert folded["max_registers_increase"].count == 31


def test_many_passing_rows_of_one_rule_that_moved_fold_into_their_range():
    """The demo's extra-work commit moved the registers of 32 instances, all passing (8,400 px of page)."""
    moved = [RuleRow("static_delta", RuleOutcome.PASS, f"f{i}: registers", value=200 + d, baseline=200, delta=d,
                     unit="registers") for i, d in enumerate((-2, -1, 1, 2, 3, 4, 5, 5))]
    few = [RuleRow("max_registers", RuleOutcome.PASS, "r", value=97, threshold=128, baseline=96, delta=1)]
    table = rule_table(moved + few)
    assert table.shown == few                                  # up to MAX_CHANGED_SHOWN stay rows
    (line,) = table.folded
    assert (line.rule, line.count, line.text) == ("static_delta", 8, "8 instances changed, all pass: registers -2..+5")


def test_changes_read_in_the_unit_an_engineer_thinks_in_and_are_coloured_by_the_rules_bound():
    regs = CompareRow("k", "g", "registers", "", "sm_90", "regs/thread", "lower", 96, 100)
    assert regs.change_text == "+4 regs/thread" and regs.tone == "bad"           # a ceiling: more is worse
    dram = CompareRow("k", "g", "dram_pct", "s", "candidate", "%", "higher", 61.6, 59.0)
    assert dram.change_text == "-2.6 pts" and dram.tone == "bad"                 # min_dram_pct: a floor
    ratio = CompareRow("k", "g", "latency_ratio", "s", "candidate", "x", "lower", 0.973, 0.999)
    assert ratio.change_text == "+2.6 %" and ratio.tone == "bad"     # % of the baseline, not "+0.026 x"
    faster = CompareRow("k", "g", "latency_median_us", "s", "candidate", "us", "lower", 100.0, 97.0)
    assert faster.change_text == "-3.0 %" and faster.tone == "good"
    peer = CompareRow("k", "g", "latency_median_us", "s", "sdpa_flash", "us", "lower", 100.0, 120.0)
    assert peer.tone == "" and peer.moved                                        # a reference: no rule judges it
    unjudged = CompareRow("k", "g", "tflops", "s", "candidate", "TFLOP/s", "higher", 100.0, 90.0)
    assert unjudged.tone == ""                                                   # no rule reads throughput
    smem = CompareRow("k", "g", "smem_bytes", "", "sm_90", "B", "lower", 32768, 33792)
    assert smem.change_text == "+1 KiB"
    still = CompareRow("k", "g", "latency_median_us", "s", "candidate", "us", "lower", 100.0, 100.5)
    assert not still.moved and still.tone == ""


def test_compare_bars_are_linear_changes_coloured_by_tone():
    fig = compare_figure(["k · s1", "k · s2"], [2.0, -5.0], ["+2.0 %", "-5.0 %"], ["bad", "good"], "a", "b")
    go.Figure(fig)
    assert fig["layout"]["xaxis"].get("type", "linear") == "linear"
    assert fig["data"][0]["orientation"] == "h" and fig["data"][0]["marker"]["color"] == ["#cf222e", "#1a7f37"]


def test_the_peak_far_above_the_kernel_is_named_under_the_axis_not_drawn():
    s = _series([5.0, 6.0, 6.5], ["accept"] * 3)
    fig = history_figure(HistoryChart("Throughput", "{unit}", [s], ["candidate"], unit="TFLOP/s",
                                      peak=Line("H100 peak (dense)", 989.4), commits={0: "abc1234", 1: "def5678"}))
    go.Figure(fig)
    assert fig["layout"]["yaxis"].get("type") != "log" and fig["layout"]["yaxis"]["range"][1] < 10
    assert fig["layout"]["xaxis"]["title"]["text"].endswith("H100 peak 989.4 TFLOP/s is above this axis")
    assert fig["layout"]["xaxis"]["ticktext"][0] == "abc1234"                  # shas on the commit axis


def test_a_line_label_is_written_in_its_axis_unit():
    s = _series([2300.0, 2400.0], ["accept"] * 2, name="latency_median_us", unit="us")
    fig = history_figure(HistoryChart("Latency", "({unit})", [s], ["candidate"], unit="us",
                                      references=[Line("sdpa_flash", 950.0)]))
    assert fig["layout"]["yaxis"]["title"]["text"] == "(ms)"
    assert "sdpa_flash 0.95 ms" in [t["name"] for t in fig["data"]]


def test_series_differ_by_fill_and_verdicts_by_the_legends_symbol():
    a = _series([40.0, 41.0], ["accept", "reject"], name="tensor_pipe_pct", unit="%", shape="s1",
                failed=[(), ("min_tensor_pipe_pct",)])
    b = _series([30.0, 31.0], ["inconclusive", "accept"], name="tensor_pipe_pct", unit="%", shape="s2")
    spills = _series([0.0, 0.0], ["accept", "reject"], name="spill_bytes", series="sm_90", unit="bytes", shape="")
    hist = KernelHistory("k", "g", 2, 1, [a, b, spills], {100: ("a" * 40, datetime(2025, 1, 1), "m"),
                                                          101: ("b" * 40, None, "n")})
    flat: list[Flat] = []
    tensor_rule = [RuleRow("min_tensor_pipe_pct", RuleOutcome.PASS, "ok", shape="s1", value=40.0, threshold=20.0)]
    charts = kernel_charts(hist, tensor_rule, {}, None, flat)
    tensor = next(c for c in charts if c.id == "tensor")
    fills = [t["marker"]["color"] for t in tensor.figure["data"] if "marker" in t]   # the lines' entries have none
    assert fills == SERIES_COLOR[:2]
    assert tensor.figure["data"][0]["marker"]["symbol"] == [VERDICT_MARK["accept"][0], VERDICT_MARK["reject"][0]]
    assert "spills" not in {c.id for c in charts} and flat[0].id == "spills" and "0 in every revision" in flat[0].text
    # b's inconclusive names no failing rule the chart is judged by: a plain dot, and not in the legend
    assert tensor.figure["data"][1]["marker"]["symbol"] == ["circle", "circle"]
    assert tensor.figure["data"][1]["marker"]["line"]["color"] == [SERIES_COLOR[1], "#ffffff"]
    legend = {item.text: item.symbol for item in page_legend(charts) if item.glyph}
    assert legend == {"accept": "circle", "reject": "x"}
    # Issue 45: without a tensor-pipe rule the reject of revision 101 is not drawn on its tensor chart
    unjudged = next(c for c in kernel_charts(hist, [], {}, None) if c.id == "tensor")
    assert {t["marker"]["symbol"] for t in unjudged.figure["data"]} == {"circle"}


def test_a_figure_no_rule_of_the_kernel_judges_is_not_coloured():
    """Issue 45, item 3: dram_pct without a DRAM rule, registers without a register rule: no colour."""
    from gate.domain.verdict import RuleOutcome, RuleRow
    from gate.read_models.compare import compare_rows, judged_metrics
    from gate.read_models.revision import RevisionMetric

    rules = [RuleRow("max_latency_regression_pct", RuleOutcome.PASS, "ok", shape="s"),
             RuleRow("static_delta", RuleOutcome.PASS, "registers +4", unit="registers")]
    judged = judged_metrics(rules)
    assert {"latency_ratio", "latency_median_us"} <= judged
    assert "dram_pct" not in judged and "registers" not in judged
    with_reg = judged_metrics([RuleRow("max_registers_increase", RuleOutcome.PASS, "ok", threshold=8)])
    assert "registers" in with_reg

    def metric(rev: int, name: str, unit: str, value: float, series: str = "candidate") -> RevisionMetric:
        return RevisionMetric(rev, "k", "g", "s" if series == "candidate" else "", name, series, value, unit,
                              "lower")
    metrics = [metric(1, "dram_pct", "%", 61.6), metric(2, "dram_pct", "%", 59.0),
               metric(1, "registers", "registers", 96, "sm_90"), metric(2, "registers", "registers", 100, "sm_90"),
               metric(1, "latency_median_us", "us", 100.0), metric(2, "latency_median_us", "us", 110.0)]
    rows = {r.name: r for r in compare_rows(metrics, 1, 2, {("k", "g"): judged})}
    assert rows["dram_pct"].moved and rows["dram_pct"].tone == ""
    assert rows["registers"].moved and rows["registers"].tone == ""
    assert rows["latency_median_us"].tone == "bad" and rows["latency_median_us"].change_text == "+10.0 %"
    other = {r.name: r for r in compare_rows(metrics, 1, 2, {("k", "g"): judged | with_reg})}
    assert other["registers"].tone == "bad" and other["registers"].change_text == "+4 registers"


def test_identical_series_are_one_trace_named_as_equal():
    """Issue 45, item 2: sm_80 under sm_90 was two legend entries and one line."""
    from gate.figures.kernel_page import merge_identical

    sm80 = _series([96.0, 100.0], ["accept"] * 2, name="registers", series="sm_80", unit="registers", shape="")
    sm90 = _series([96.0, 100.0], ["accept"] * 2, name="registers", series="sm_90", unit="registers", shape="")
    sm89 = _series([90.0, 100.0], ["accept"] * 2, name="registers", series="sm_89", unit="registers", shape="")
    kept, labels = merge_identical([sm80, sm89, sm90], ["sm_80", "sm_89", "sm_90"])
    assert kept == [sm80, sm89] and labels == ["sm_80 = sm_90", "sm_89"]
    hist = KernelHistory("k", "g", 2, 1, [sm80, sm90], {100: ("a" * 40, None, "m"), 101: ("b" * 40, None, "n")})
    regs = next(c for c in kernel_charts(hist, [], {}, None) if c.id == "registers")
    assert [t["name"] for t in regs.figure["data"]] == ["sm_80 = sm_90"]


def test_log_axes_are_labelled_in_every_decade_and_flat_series_look_flat():
    from gate.figures.axes import fit_range, log_ticks, value_axis

    ticks, _ = log_ticks(20.0, 3000.0, "count")
    assert {20.0, 50.0, 200.0, 2000.0} <= set(ticks)            # 20-40 readable, not only 100 and 1000
    kib = [32768.0, 33024.0, 32768.0]                           # 32 KiB with one 256 B step
    axis = value_axis(kib, "bytes")
    low, high = fit_range(axis, kib, 250)
    assert high - low >= 0.2 * 32.25                             # at least a fifth of the value, in KiB
    regs = [243.0, 247.0, 254.0]                                # the GPU-less demo's registers
    low, high = fit_range(value_axis(regs, "registers"), regs, 250)
    assert (254 - 243) / (high - low) < 0.25                    # +4 registers is no cliff


def test_a_change_marker_names_the_series_that_moved():
    from gate.changepoints import detect

    steady = _series([10.0] * 12, ["accept"] * 12)
    moved = _series([10.0] * 6 + [12.0] * 6, ["accept"] * 12)
    fig = history_figure(HistoryChart("SASS", "{unit}", [steady, moved], ["LDS", "FFMA"],
                                      change_points=[detect(steady.value), detect(moved.value)]))
    texts = [a["text"] for a in fig["layout"]["annotations"] if a["text"].startswith("change")]
    assert texts and all(t.endswith("(FFMA)") for t in texts)


def test_a_limit_is_named_in_the_legend_never_written_over_the_points():
    s = _series([1.00, 1.01, 1.02], ["accept"] * 3, name="latency_vs_baseline", unit="x")
    fig = history_figure(HistoryChart("Latency vs baseline", "({unit})", [s], ["candidate"], unit="x",
                                      thresholds=[Line("+3 %", 1.03)]))
    assert not [a for a in fig["layout"]["annotations"] if a["text"].startswith("limit")]
    (entry,) = [t for t in fig["data"] if t["name"].startswith("limit")]
    (line,) = [sh for sh in fig["layout"]["shapes"] if sh["y0"] == 1.03]
    # The entry draws no point (its one point is empty) and shows the line's own dash and colour.
    assert entry["x"] == [None] and entry["showlegend"] and entry["line"] == line["line"]
