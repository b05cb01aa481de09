"""Metric extraction: the names, series, units and directions the dashboards read."""

from service_fakes import job_result

from gate.domain import StageStatus, StaticResult
from gate.storage.recording import extract_metrics, stage_records


def _index(metrics):
    return {(m.name, m.shape, m.series): m for m in metrics}


def test_bench_metrics_cover_candidate_baseline_and_peers_per_shape():
    m = _index(extract_metrics(job_result()))
    shape = "b1_h8_s512_d64"
    assert m[("latency_median_us", shape, "candidate")].value == 50.0
    assert m[("latency_median_us", shape, "baseline")].value == 52.0
    assert m[("tflops", shape, "sdpa_flash")].value == 90.0
    assert m[("tflops", shape, "sdpa_flash")].direction == "higher"
    assert m[("latency_p90_us", shape, "candidate")].unit == "us"
    assert abs(m[("latency_ratio", shape, "candidate")].value - 50 / 52) < 1e-12


def test_static_metrics_take_the_worst_function_per_arch():
    m = _index(extract_metrics(job_result()))
    assert m[("registers", "", "sm_80")].value == 128
    assert m[("spill_bytes", "", "sm_80")].value == 12
    assert m[("smem_bytes", "", "sm_80")].value == 16384
    assert m[("registers", "", "sm_90")].value == 90
    assert m[("spill_bytes", "", "sm_80")].direction == "lower"


def test_ncu_metrics_are_weighted_by_launch_duration():
    m = _index(extract_metrics(job_result()))
    # fwd_a 60 % for 3000 ns, fwd_b 20 % for 1000 ns -> 50 %
    assert m[("tensor_pipe_pct", "b1_h8_s512_d64", "candidate")].value == 50.0
    # only fwd_a reported DRAM: no averaging with a missing value
    assert m[("dram_pct", "b1_h8_s512_d64", "candidate")].value == 30.0
    assert m[("warps_active_pct", "b1_h8_s512_d64", "candidate")].direction == "higher"


def test_missing_stages_give_no_metrics():
    result = job_result()
    result.bench = None
    result.candidate.profile = None
    result.candidate.static = StaticResult(status=StageStatus.FAILED, reason="compile error")
    assert extract_metrics(result) == []


def test_stage_records_name_side_and_stage():
    rows = stage_records(job_result())
    assert [(r.side, r.stage, r.status) for r in rows] == [
        ("candidate", "static", "passed"), ("candidate", "profile", "passed"), ("joint", "bench", "passed"),
    ]
    assert rows[0].payload["functions"][0]["sass_opcodes"] == {"HMMA": 64}
