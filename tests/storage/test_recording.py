"""Metric extraction: the names, series, units and directions the dashboards read."""

from service_fakes import FakeOutcome, job_result

from gate.domain import StageStatus, StaticResult, Verdict, VerdictReport
from gate.nvidia.sass_families import SASS_METRICS
from gate.storage import claims
from gate.storage.models import Job, Repository, Revision
from gate.storage.outcomes import store_outcome
from gate.storage.recording import extract_metrics, stage_records


def _index(metrics):
    return {(m.name, m.shape, m.series): m for m in metrics}


def _claimed_job(session_factory, kernel: str) -> tuple[int, int]:  # noqa: ANN001
    with session_factory() as s:
        job = Job(revision=Revision(repository=Repository(name="octo/flash", url="https://x/octo/flash.git"),
                                    sha="c" * 40, branch="main"), kernel=kernel, gpu_kind="H100")
        s.add(job)
        s.commit()
        return job.id, claims.Claims(s).claim(job.id, worker="w")


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


def test_every_figure_carries_the_jobs_environment_key():
    from gate.domain import Fingerprint

    result = job_result()
    result.fingerprint = Fingerprint(gpu_name="NVIDIA H200", driver="570.86.15")
    result.bench.clock_policy = "lock"
    rows = extract_metrics(result)
    assert rows and {m.environment for m in rows} == {"NVIDIA H200 | driver 570.86.15 | clocks lock"}
    result.fingerprint = None
    assert {m.environment for m in extract_metrics(result)} == {""}   # as rows stored before 0003


def test_kilocycles_stand_beside_the_median_where_the_sm_clock_was_seen():
    from gate.domain import GpuWatch

    result = job_result()
    assert not [m for m in extract_metrics(result) if m.name == "latency_median_kcycles"]   # no watch
    result.bench.gpu_watch = GpuWatch(available=True, sm_clock_mhz_median=1980.0)
    m = _index(extract_metrics(result))
    shape = "b1_h8_s512_d64"
    assert m[("latency_median_kcycles", shape, "candidate")].value == 50.0 * 1980 / 1000
    assert m[("latency_median_kcycles", shape, "baseline")].value == 52.0 * 1980 / 1000
    assert m[("latency_median_kcycles", shape, "candidate")].unit == "kcycles"
    result.bench.gpu_watch = GpuWatch(available=False, reason="no NVML")
    assert not [m for m in extract_metrics(result) if m.name == "latency_median_kcycles"]


def test_the_pooled_conflict_figure_the_rule_judges_is_stored():
    """max_bank_conflict_pct judges loads and stores pooled, worst launch per shape: that figure is
    stored (and charted with the rule's limit), beside the separate ld and st rates."""
    from gate.domain import KernelMetrics, ProfileResult
    from gate.domain.launches import by_shape, shape_figure
    from gate.domain.names import Metric
    from gate.verdict.rules import ncu_absolute_rows
    from gate.domain import Gates

    result = job_result()
    shape = "b1_h8_s512_d64"
    result.candidate.profile = ProfileResult(status=StageStatus.PASSED, kernels=[
        # 67 M clean ldmatrix wavefronts and a few 2-way epilogue stores: 0.7 % pooled, 24 % for stores
        KernelMetrics("fwd_a", shape=shape, duration_ns=3000.0, ld_bank_conflicts=6_136, ld_wavefronts=67_639_288,
                      st_bank_conflicts=480_000, st_wavefronts=2_000_000, ld_bank_conflict_pct=0.01,
                      st_bank_conflict_pct=24.0),
        KernelMetrics("fwd_b", shape=shape, duration_ns=1000.0, ld_bank_conflict_pct=3.0, st_bank_conflict_pct=0.0),
    ])
    m = _index(extract_metrics(result))
    stored = m[("shared_conflict_pct", shape, "candidate")]
    assert stored.value == 3.0 and stored.direction == "lower"          # the worst launch, not a mean
    (row,) = ncu_absolute_rows(result.candidate.profile, Gates(max_bank_conflict_pct=10))
    assert row.value == round(stored.value, 3)
    assert shape_figure(by_shape(result.candidate.profile.kernels)[shape], Metric.SHARED_CONFLICT_PCT) == 3.0
    assert m[("st_bank_conflict_pct", shape, "candidate")].value == 18.0   # duration-weighted, not judged


def test_sass_opcode_families_are_summed_over_a_kernels_functions_per_arch():
    m = _index(extract_metrics(job_result()))
    # sm_80: fwd_a HMMA x64 and fwd_b HMMA x32; sm_90: fwd_a HGMMA x16
    assert m[("sass_tensor_core", "", "sm_80")].value == 96
    assert m[("sass_total", "", "sm_80")].value == 96
    assert m[("sass_tensor_core", "", "sm_90")].value == 16
    assert m[("sass_shared", "", "sm_90")].value == 0        # a family the code lacks is a 0, stored
    row = m[("sass_shuffle", "", "sm_80")]
    assert (row.unit, row.direction, row.environment) == ("instructions", "neither", "")
    assert {name for name, _, _ in m if name.startswith("sass_")} == {s.value for s in SASS_METRICS}


def test_without_a_disassembler_no_opcode_count_is_stored_but_ptxas_figures_are():
    result = job_result()
    result.candidate.static.sass_available = False
    names = {m.name for m in extract_metrics(result)}
    assert "registers" in names and not any(name.startswith("sass_") for name in names)


def test_the_kernel_history_carries_the_stored_opcode_counts_per_arch(session_factory, tmp_path):
    """Stored with the verdict, read back by the kernel page's query for the traces it draws."""
    from gate.figures.kernel_page import wanted_traces
    from gate.storage.kernel_series import KernelSeries

    job_id, attempt = _claimed_job(session_factory, "attn")
    with session_factory() as s:
        store_outcome(s, job_id, attempt, FakeOutcome(job_result(), VerdictReport(Verdict.ACCEPT, "ok")), tmp_path)
    with session_factory() as s:
        archs = KernelSeries(s).archs("attn", "H100")
        hist = KernelSeries(s).history("attn", "H100", wanted_traces([], archs))
    values = {(h.name, h.series): h.value.tolist() for h in hist.series}
    assert archs == ["sm_80", "sm_90"]
    assert values[("sass_tensor_core", "sm_80")] == [96.0] and values[("sass_total", "sm_90")] == [16.0]
    assert {name for name, _ in values if name.startswith("sass_")} == {s.value for s in SASS_METRICS}
