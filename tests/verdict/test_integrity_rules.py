"""The rules of the measurement's own integrity: hidden work on other streams, impossible speeds."""

import pytest

from gate.domain import BenchResult, RuleOutcome, ShapeTiming, StageStatus, TimingSamples
from gate.nvidia import roofline
from gate.domain.rule_catalog import Rule
from gate.verdict.rules import integrity_rows


def shape(events_us: float, all_streams_us: float | None, floor_us: float | None = None,
          enqueue_us: float = 1.0, caller_stream_us: float | None = None) -> ShapeTiming:
    return ShapeTiming("m1024", "float16", TimingSamples([events_us], events_us, events_us, events_us),
                       all_streams_us=all_streams_us, enqueue_us=enqueue_us, caller_stream_us=caller_stream_us,
                       floor_us=floor_us,
                       floor_basis="compute 2.15 GFLOP at 989.4 TFLOP/s" if floor_us else "")


def rows(*shapes: ShapeTiming):
    return integrity_rows(BenchResult(StageStatus.PASSED, shapes=list(shapes)))


def test_work_on_a_private_stream_fails_with_both_figures():
    (row,) = rows(shape(0.02, 457.0))
    assert (row.rule, row.outcome) == (Rule.ALL_STREAMS_TIME, RuleOutcome.FAIL)
    assert "work outside the caller's stream" in row.reason
    assert "457 us per call until every stream finished" in row.reason
    assert "0.02 us on the caller's stream" in row.reason


def test_a_joined_stream_or_warm_trace_passes():
    (row,) = rows(shape(100.0, 96.0))
    assert row.outcome is RuleOutcome.PASS


def test_a_small_kernel_gets_slack_for_fork_and_join_gaps():
    (row,) = rows(shape(4.0, 6.5))          # 4 x 1.25 + 2 = 7 us allowed
    assert row.outcome is RuleOutcome.PASS


def test_a_launch_bound_loop_is_explained_by_the_host_enqueue_time():
    (row,) = rows(shape(9.0, 36.0, enqueue_us=35.0))   # 9 us kernel behind 35 us of Python per call
    assert row.outcome is RuleOutcome.PASS


def test_a_loop_slower_than_the_cold_event_time_is_judged_against_the_same_loop_on_the_caller_stream():
    """causal-conv1d's fp16 forward on an H100: 52.5 us cold with events, 68 us per call in the eager
    loop. Against the event time that read as hidden work; the caller's stream over the same calls
    explains it."""
    (row,) = rows(shape(52.5, 68.0, caller_stream_us=67.4))
    assert row.outcome is RuleOutcome.PASS
    assert row.reason == "68 us per call until every stream finished vs 67.4 us on the caller's stream over the same calls"
    assert row.baseline == 67.4


def test_a_private_stream_is_caught_against_the_caller_stream_of_the_same_loop():
    # The caller's stream holds nothing: its events read the host's pace between the two records.
    (row,) = rows(shape(0.02, 312.0, enqueue_us=8.0, caller_stream_us=8.3))
    assert row.outcome is RuleOutcome.FAIL
    assert row.reason == ("work outside the caller's stream: 312 us per call until every stream finished "
                          "vs 8.3 us on the caller's stream over the same calls (limit 12.375 us)")


def test_a_result_stored_before_the_caller_stream_figure_is_judged_as_it_was():
    assert rows(shape(52.5, 68.0))[0].outcome is RuleOutcome.FAIL       # 52.5 x 1.25 + 2 = 67.6 us


def test_a_missing_measure_cannot_pass():
    (row,) = rows(shape(100.0, None))
    assert row.outcome is RuleOutcome.NOT_RUN


def test_a_time_below_the_floor_is_rejected_with_the_figures():
    _, floor = rows(shape(1.0, 1.0, floor_us=2.17))
    assert (floor.rule, floor.outcome) == (Rule.PHYSICAL_FLOOR, RuleOutcome.FAIL)
    assert floor.reason.startswith("faster than the hardware allows: 1 us vs floor 2.17 us (compute")


def test_a_time_above_the_floor_passes_and_no_floor_means_no_row():
    assert rows(shape(10.0, 9.0, floor_us=2.17))[1].outcome is RuleOutcome.PASS
    assert [r.rule for r in rows(shape(10.0, 9.0))] == [Rule.ALL_STREAMS_TIME]


def test_the_h100_floor_of_a_2048_gemm_is_compute_bound():
    peak = roofline.peak_for("NVIDIA H100 80GB HBM3")
    floor = roofline.floor_us(peak, "float16", 2 * 2048**3, (2 * 2048 * 2048) * 2 + 2048 * 2048 * 2,
                              )
    assert floor.floor_us == pytest.approx(2 * 2048**3 / 989.4e12 * 1e6)
    assert floor.basis.startswith("compute")


def test_float8_inputs_are_floored_at_the_fp8_tensor_peak():
    # FlashAttention-3's FP8 forward runs at ~1.2 PFLOP/s on an H100: above the 16-bit peak, so a floor
    # at that peak would call an honest e4m3 kernel false
    flops = 4.0 * 4 * 16 * 4096**2 * 128
    honest_us = flops / 1.2e15 * 1e6
    h200 = roofline.peak_for("NVIDIA H200")
    floor = roofline.floor_us(h200, "float8_e4m3fn", flops, None)
    assert floor.floor_us == pytest.approx(flops / 1978.9e12 * 1e6) and floor.floor_us < honest_us
    assert roofline.floor_us(h200, "bfloat16", flops, None).floor_us > honest_us
    a100 = roofline.peak_for("NVIDIA A100-SXM4-80GB")         # no FP8 tensor cores: its 16-bit rate
    assert roofline.floor_us(a100, "float8_e4m3fn", flops, None) == roofline.floor_us(a100, "float16", flops, None)


def test_a_memory_bound_call_keeps_a_memory_floor_for_every_method():
    peak = roofline.peak_for("NVIDIA H200")
    cold = roofline.floor_us(peak, "float32", 1e6, 1e9)
    warm = roofline.floor_us(peak, "float32", 1e6, 1e9, warm_memory=True)
    assert cold.floor_us == pytest.approx(1e9 / 4.8e12 * 1e6) and cold.basis.startswith("memory")
    # graph-timed: the bytes may come from L2, at most WARM_L2_SPEEDUP x DRAM, never for free
    assert warm.floor_us == pytest.approx(1e9 / (4.8e12 * roofline.WARM_L2_SPEEDUP) * 1e6)
    assert warm.basis.startswith("memory") and "L2" in warm.basis


def test_a_graph_that_replayed_nothing_is_under_the_memory_floor_without_flops():
    # issue 25: a public RMSNorm kernel on a default stream, graph-timed at 0.0205 us, no FLOPs declared
    floor = roofline.floor_us(roofline.peak_for("NVIDIA H100 80GB HBM3"), "float16", None, 2 * 64 * 4096 * 2,
                              warm_memory=True)
    assert floor is not None and floor.floor_us > 0.0205


def test_model_names_match_most_specific_first_and_unknown_gpus_get_none():
    assert roofline.peak_for("NVIDIA H100 NVL").dram_tb_s == 3.9
    assert roofline.peak_for("NVIDIA H100 PCIe").tflops_16bit == 756.5
    assert roofline.peak_for("NVIDIA GeForce RTX 2080") is None
    assert roofline.floor_us(roofline.PEAKS[0][1], "float16", None, None) is None
