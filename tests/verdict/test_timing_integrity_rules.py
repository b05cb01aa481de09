"""The verdict rows of issue 25 from recorded figures: timed work checked, the methods agreeing with a
device-wide clock, the timer untouched, the profile describing the timed program."""

from gate.domain import BenchResult, RuleOutcome, ShapeTiming, StageStatus, TimingSamples
from gate.domain.manifest import Gates
from gate.domain.rule_catalog import Rule
from gate.domain.results import (
    BuildResult,
    CorrectnessCase,
    CorrectnessResult,
    GpuWatch,
    JobResult,
    KernelMetrics,
    ProfileResult,
    SideResults,
    StaticResult,
)
from gate.verdict.decide import decide
from gate.verdict.timing_integrity import distrust_profile, timing_integrity_rows

O, P = RuleOutcome, StageStatus.PASSED


def timing(median=100.0, checked=12, wrong=0, evidence="12 timed call(s) checked in full, all within the "
           "float16 tolerance", method="events", eager=100.0, graph=None, nodes=None, all_streams=101.0,
           enqueue=5.0, note="") -> ShapeTiming:
    samples = TimingSamples([median], median, median, median)
    return ShapeTiming("m1024", "float16", samples, baseline=samples, ratio=1.0, ratio_ci_low=0.99,
                       ratio_ci_high=1.01, p_value=0.9, method=method, all_streams_us=all_streams,
                       enqueue_us=enqueue, caller_stream_us=all_streams, timed_checked=checked, timed_wrong=wrong,
                       timed_evidence=evidence, eager_us=eager, graph_us=graph, graph_work_nodes=nodes,
                       method_note=note)


def result(*shapes, tampered=(), kernels=None, watch=None) -> JobResult:
    bench = BenchResult(P, shapes=list(shapes), tampered=list(tampered), gpu_watch=watch)
    profile = ProfileResult(P, kernels=kernels if kernels is not None else
                            [KernelMetrics("k", shape="m1024", dtype="float16", duration_ns=90_000,
                                           ld_bank_conflict_pct=0.0, st_bank_conflict_pct=0.0)])
    cand = SideResults("c" * 40, static=StaticResult(P), build=BuildResult(P),
                       correctness=CorrectnessResult(P, cases=[CorrectnessCase("m1024", "float16", 1, True, 0.1,
                                                                               0.01, 0.1, 1.0)]),
                       profile=profile)
    return JobResult(kernel="k", candidate=cand, baseline=SideResults("b" * 40), bench=bench)


def by_rule(rows):
    return {r.rule: r for r in rows}


def test_an_honest_job_passes_every_row_with_its_figures():
    rows = by_rule(timing_integrity_rows(result(timing())))
    assert {r.outcome for r in rows.values()} == {O.PASS}
    assert set(rows) == {Rule.TIMED_OUTPUTS, Rule.TIMING_METHODS_AGREE, Rule.TIMER_UNTOUCHED,
                         Rule.PROFILE_MATCHES_TIMING}
    assert "timed by events at 100 us, eager 100 us, device-wide 101 us per call" in rows[Rule.TIMING_METHODS_AGREE].reason
    assert "Nsight Compute measured 90 us" in rows[Rule.PROFILE_MATCHES_TIMING].reason


def test_a_kernel_wrong_on_some_timed_calls_is_rejected_naming_the_call_and_the_mismatch():
    evidence = "2 of 14 checked timed call(s) wrong; timed call 37: unwritten (NaN/Inf) output elements; " \
               "timed call 81: max |out - expected| 31.2 > tol 3.1"
    report = decide(result(timing(checked=14, wrong=2, evidence=evidence)), Gates(max_latency_regression_pct=3))
    assert report.verdict.value == "reject"
    assert report.reason.startswith("reject: timed_outputs m1024 float16: 2 of 14 checked timed call(s) wrong; "
                                    "timed call 37: unwritten")


def test_no_checked_call_is_not_run_never_a_pass():
    (row,) = [r for r in timing_integrity_rows(result(timing(checked=0))) if r.rule == Rule.TIMED_OUTPUTS]
    assert row.outcome is O.NOT_RUN


def test_a_bench_from_before_the_checks_gets_none_of_these_rows():
    assert timing_integrity_rows(result(timing(checked=None, eager=None))) == []


def test_a_graph_that_replayed_nothing_is_no_honest_figure():
    # issue 25: 0.0202 us per call for a kernel the device-wide clock sees at 20 us per call
    st = timing(median=0.0202, method="graph", eager=20.3, graph=0.0202, nodes=64, all_streams=20.3, enqueue=6.0)
    row = by_rule(timing_integrity_rows(result(st)))[Rule.TIMING_METHODS_AGREE]
    assert row.outcome is O.FAIL and row.reason.startswith("no honest figure: timed by graph at 0.0202 us")
    assert "device-wide 20.3 us per call" in row.reason and row.threshold == 10.15


def test_a_refused_graph_timed_eagerly_passes_and_says_why():
    note = "the candidate's graph holds 0 kernel/copy nodes for 64 calls (launches on a default stream escape " \
           "the capture): timed eagerly with events on the caller's stream"
    st = timing(median=20.1, method="events", eager=20.3, graph=0.0202, nodes=0, all_streams=20.5, enqueue=6.0,
                note=note)
    row = by_rule(timing_integrity_rows(result(st)))[Rule.TIMING_METHODS_AGREE]
    assert row.outcome is O.PASS and note in row.reason and "(0 work nodes captured)" in row.reason


def test_a_host_paced_batch_bounds_nothing_and_says_so():
    st = timing(median=2.0, method="graph", eager=3.0, graph=2.0, nodes=64, all_streams=30.0, enqueue=29.0)
    row = by_rule(timing_integrity_rows(result(st)))[Rule.TIMING_METHODS_AGREE]
    assert row.outcome is O.PASS and "paced by the host" in row.reason


def test_on_an_unsteady_gpu_a_disagreement_is_inconclusive():
    st = timing(median=10.0, all_streams=40.0, enqueue=5.0)
    watch = GpuWatch(available=True, other_processes=["pid 7: 2048 MiB"])
    watch.problems = ["another process used the GPU"]
    row = by_rule(timing_integrity_rows(result(st, watch=watch)))[Rule.TIMING_METHODS_AGREE]
    assert row.outcome is O.INCONCLUSIVE and "GPU not steady" in row.reason


def test_a_patched_timer_is_rejected_by_name():
    report = decide(result(timing(), tampered=["torch.cuda.Event.elapsed_time"]), Gates(max_latency_regression_pct=3))
    assert report.reason.startswith("reject: timer_untouched: submitted code replaced the timer's "
                                    "torch.cuda.Event.elapsed_time")


def test_a_kernel_that_runs_other_code_under_the_profiler_is_flagged_and_its_profile_not_judged():
    small = [KernelMetrics("k", shape="m1024", dtype="float16", duration_ns=3_000, ld_bank_conflict_pct=0.0,
                           st_bank_conflict_pct=0.0)]
    report = decide(result(timing(), kernels=small), Gates(max_latency_regression_pct=3, max_bank_conflict_pct=10))
    rows = by_rule(report.rules)
    assert report.reason.startswith("reject: profile_matches_timing m1024 float16: the profiled program is not "
                                    "the timed one: Nsight Compute measured 3 us")
    assert rows[Rule.MAX_BANK_CONFLICT_PCT].outcome is O.INCONCLUSIVE


def test_a_profiled_call_that_launched_nothing_fails():
    rows = by_rule(timing_integrity_rows(result(timing(), kernels=[KernelMetrics("k", shape="other")])))
    assert rows[Rule.PROFILE_MATCHES_TIMING].outcome is O.FAIL
    assert "launched no kernel" in rows[Rule.PROFILE_MATCHES_TIMING].reason


def test_the_profile_tolerance_covers_base_clocks_and_launch_gaps():
    # ncu at base clock (x1.25 slower on an H100) and a small graph-timed call whose launch gaps ncu omits
    slow = [KernelMetrics("k", shape="m1024", dtype="float16", duration_ns=125_000)]
    assert by_rule(timing_integrity_rows(result(timing(), kernels=slow)))[Rule.PROFILE_MATCHES_TIMING].outcome is O.PASS
    gaps = [KernelMetrics("k", shape="m1024", dtype="float16", duration_ns=1_500)]
    st = timing(median=3.0, eager=3.5, all_streams=3.4, enqueue=3.0)
    assert by_rule(timing_integrity_rows(result(st, kernels=gaps)))[Rule.PROFILE_MATCHES_TIMING].outcome is O.PASS


def test_distrust_leaves_rows_alone_when_the_profile_matches():
    rows = timing_integrity_rows(result(timing()))
    assert distrust_profile(rows) == rows
