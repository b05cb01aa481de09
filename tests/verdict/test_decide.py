import pytest

from gate.domain import (
    GpuWatch,
    BenchResult,
    BuildResult,
    CorrectnessCase,
    CorrectnessResult,
    FunctionResources,
    Gates,
    JobResult,
    KernelMetrics,
    ProfileResult,
    RuleOutcome,
    ShapeTiming,
    SideResults,
    StageStatus,
    StaticResult,
    TimingSamples,
    Verdict,
)
from gate.domain.rule_catalog import Kind
from gate.notify import messages
from gate.verdict.decide import BUILDERS, decide

P, F, N = StageStatus.PASSED, StageStatus.FAILED, StageStatus.NOT_RUN
FN = "_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams"


def static(**kw) -> StaticResult:
    fns = [FunctionResources(FN, "sm_80", 72, 10240, 0, 0, 0, {"HMMA": 16}),
           FunctionResources(FN, "sm_90", 64, 10240, 0, 0, 0, {"HMMA": 16})]
    return StaticResult(status=kw.pop("status", P), functions=kw.pop("functions", fns),
                        sass_available=kw.pop("sass_available", True), **kw)


def timing(shape="m1024", ratio=1.0, lo=0.99, hi=1.01, p=0.5, base_us=100.0, dtype="float16") -> ShapeTiming:
    cand_us = base_us * ratio
    return ShapeTiming(shape=shape, dtype=dtype,
                       candidate=TimingSamples([cand_us], cand_us, cand_us, cand_us),
                       baseline=TimingSamples([base_us], base_us, base_us, base_us),
                       ratio=ratio, ratio_ci_low=lo, ratio_ci_high=hi, p_value=p, all_streams_us=cand_us * 0.95)


def full(*, timings=None, cand_kernels=None, base_kernels=None, cases=None) -> JobResult:
    """A job in which every stage passed (a GPU machine), to be spoiled by each test."""
    cases = cases or [CorrectnessCase("m1024", "float16", s, True, 0.01, 0.001, 0.01, 0.05) for s in range(3)]
    cand_kernels = cand_kernels or [KernelMetrics("k", shape="m1024", duration_ns=1000, tensor_pipe_pct=50,
                                                  ld_bank_conflict_pct=1, st_bank_conflict_pct=0,
                                                  warps_active_pct=40, dram_pct=70)]
    base_kernels = base_kernels or [KernelMetrics("k", shape="m1024", duration_ns=1000, tensor_pipe_pct=52,
                                                  ld_bank_conflict_pct=1, st_bank_conflict_pct=0)]
    return JobResult(
        kernel="wmma_gemm",
        candidate=SideResults("c" * 40, static=static(), build=BuildResult(P),
                              correctness=CorrectnessResult(P, cases=cases),
                              profile=ProfileResult(P, kernels=cand_kernels)),
        baseline=SideResults("b" * 40, build=BuildResult(P), profile=ProfileResult(P, kernels=base_kernels)),
        bench=BenchResult(P, shapes=timings or [timing()]),
    )


GATES = Gates(max_latency_regression_pct=3, max_bank_conflict_pct=10, max_spill_bytes=0,
              require_sass=["HMMA"], max_registers=128)


def test_every_kind_has_a_builder_run_in_the_kinds_order():
    assert list(BUILDERS) == list(Kind)


def rows(report, rule):
    return [r for r in report.rules if r.rule == rule]


def test_every_stage_passing_is_accept_with_the_rule_table():
    report = decide(full(), GATES)
    assert report.verdict is Verdict.ACCEPT
    assert report.reason.startswith("accept: all ")
    assert {r.rule for r in report.rules} >= {"static", "build", "max_registers", "max_spill_bytes",
                                              "require_sass", "correctness", "max_latency_regression_pct",
                                              "max_bank_conflict_pct"}
    assert all(r.outcome is RuleOutcome.PASS for r in report.rules)


def test_cpu_machine_is_incomplete_never_accept():
    result = full()
    reason = "not run: no CUDA device"
    result.candidate.build = BuildResult(N, reason=reason)
    result.candidate.correctness = CorrectnessResult(N, reason=reason)
    result.bench = BenchResult(N, reason=reason)
    result.candidate.profile = ProfileResult(N, reason=reason)
    result.baseline = None
    report = decide(result, GATES)
    assert report.verdict is Verdict.INCOMPLETE
    assert report.reason == "incomplete: build: not run: no CUDA device (+3 more)"
    assert {r.rule for r in report.rules if r.outcome is RuleOutcome.NOT_RUN} == {
        "build", "correctness", "bench", "profile"}


def test_compile_failure_rejects_with_the_log_line():
    result = full()
    result.candidate.static = static(status=F, reason="compile error (sm_80): x.cu(3): error: bad")
    report = decide(result, GATES)
    assert report.verdict is Verdict.REJECT
    assert "x.cu(3): error: bad" in report.reason


def test_registers_over_the_limit_reject_naming_the_arch_and_kernel():
    report = decide(full(), Gates(max_registers=64))
    assert report.verdict is Verdict.REJECT
    (sm80, sm90) = rows(report, "max_registers")
    assert (sm80.outcome, sm80.value, sm80.threshold) == (RuleOutcome.FAIL, 72, 64)
    assert sm90.outcome is RuleOutcome.PASS
    assert "sm_80 wmma_gemm_kernel: 72 registers is over the limit of 64 registers" in report.reason


def test_spills_and_smem_limits_use_the_worst_function_per_arch():
    result = full()
    result.candidate.static.functions[1].spill_store_bytes = 8
    report = decide(result, Gates(max_spill_bytes=0, max_smem_bytes=8192))
    assert [r.outcome for r in rows(report, "max_spill_bytes")] == [RuleOutcome.PASS, RuleOutcome.FAIL]
    assert all(r.outcome is RuleOutcome.FAIL and r.value == 10240 for r in rows(report, "max_smem_bytes"))


def test_require_sass_fails_per_arch_when_the_opcode_is_missing():
    result = full()
    result.candidate.static.functions[1].sass_opcodes = {"FFMA": 100}
    report = decide(result, Gates(require_sass=["HMMA"]))
    assert [r.outcome for r in rows(report, "require_sass")] == [RuleOutcome.PASS, RuleOutcome.FAIL]
    assert report.reason == "reject: require_sass: sm_90: missing HMMA"


def test_require_sass_without_a_disassembler_is_not_run():
    result = full()
    result.candidate.static = static(sass_available=False)
    report = decide(result, Gates(require_sass=["HMMA"]))
    assert report.verdict is Verdict.INCOMPLETE
    assert "cuobjdump" in rows(report, "require_sass")[0].reason


def test_correctness_failure_rejects_with_the_worst_case():
    cases = [CorrectnessCase("m1024", "float16", 0, False, 0.2, 0.01, 0.01, 0.05),
             CorrectnessCase("m1024", "float16", 1, False, None, None, 0.01, 0.05, reason="NaN in output"),
             CorrectnessCase("m2048", "float16", 0, True, 0.01, 0.001, 0.01, 0.05)]
    result = full(cases=cases)
    result.candidate.correctness.status = F
    report = decide(result, GATES)
    assert report.verdict is Verdict.REJECT
    assert report.reason == "reject: correctness m1024: float16 seed 1: NaN in output"
    assert [r.outcome for r in rows(report, "correctness")] == [RuleOutcome.FAIL, RuleOutcome.PASS]


def test_a_crash_during_correctness_rejects_even_without_failed_cases():
    result = full()
    result.candidate.correctness = CorrectnessResult(F, reason="child killed by SIGSEGV during correctness")
    report = decide(result, GATES)
    assert report.verdict is Verdict.REJECT
    assert "SIGSEGV" in report.reason


@pytest.mark.parametrize(("ratio", "lo", "hi", "p", "outcome"), [
    (1.10, 1.08, 1.12, 0.001, RuleOutcome.FAIL),          # large and significant
    (1.10, 1.08, 1.12, 0.20, RuleOutcome.INCONCLUSIVE),   # large but not significant
    (1.03, 1.01, 1.05, 0.001, RuleOutcome.INCONCLUSIVE),  # interval straddles 3 %
    (1.01, 1.00, 1.02, 0.001, RuleOutcome.PASS),          # significant but within the threshold
    (0.90, 0.88, 0.92, 0.001, RuleOutcome.PASS),          # faster
])
def test_latency_regresses_only_when_large_and_significant(ratio, lo, hi, p, outcome):
    report = decide(full(timings=[timing(ratio=ratio, lo=lo, hi=hi, p=p)]), GATES)
    (row,) = rows(report, "max_latency_regression_pct")
    assert row.outcome is outcome
    assert row.baseline == 100.0 and row.threshold == 103.0 and row.unit == "us"


def test_rows_timed_per_dtype_say_which_dtype_and_so_does_the_reason():
    """causal-conv1d is gated in float16 and bfloat16: two rows per shape that read alike in the CLI
    table until the dtype was shown."""
    report = decide(full(timings=[timing(), timing(ratio=1.2, lo=1.18, hi=1.22, p=0.001, dtype="bfloat16")]), GATES)
    assert [r.where for r in rows(report, "max_latency_regression_pct")] == ["m1024 float16", "m1024 bfloat16"]
    assert [r.where for r in rows(report, "all_streams_time")] == ["m1024 float16", "m1024 bfloat16"]
    assert report.reason.startswith("reject: max_latency_regression_pct m1024 bfloat16: +20.0 % slower")


def test_inconclusive_latency_makes_the_verdict_inconclusive():
    report = decide(full(timings=[timing(ratio=1.03, lo=1.01, hi=1.05, p=0.001)]), GATES)
    assert report.verdict is Verdict.INCONCLUSIVE
    assert "straddles" in report.reason


def test_latency_without_a_baseline_is_not_run():
    t = timing()
    t.baseline, t.ratio = None, None
    report = decide(full(timings=[t]), GATES)
    assert rows(report, "max_latency_regression_pct")[0].outcome is RuleOutcome.NOT_RUN
    assert report.verdict is Verdict.INCOMPLETE


def test_a_new_kernel_passes_the_baseline_rules_saying_why():
    t = timing()
    t.baseline, t.ratio = None, None
    job = full(timings=[t])
    job.baseline, job.new_kernel = None, True
    gates = Gates(max_latency_regression_pct=3, max_tensor_pipe_drop_pct=5)
    report = decide(job, gates)
    (latency,) = rows(report, "max_latency_regression_pct")
    (drop,) = rows(report, "max_tensor_pipe_drop_pct")
    assert latency.outcome is drop.outcome is RuleOutcome.PASS
    assert "new kernel" in latency.reason and "new kernel" in drop.reason
    assert report.verdict is Verdict.ACCEPT


def test_bank_conflicts_over_the_limit_reject_with_the_measured_rate():
    kernels = [KernelMetrics("k", shape="m1024", ld_bank_conflict_pct=48.4, st_bank_conflict_pct=3)]
    report = decide(full(cand_kernels=kernels), GATES)
    assert report.verdict is Verdict.REJECT
    assert report.reason == "reject: max_bank_conflict_pct m1024: bank conflicts 48.4 % is over the limit of 10 %"


def test_absolute_ncu_rules_apply_only_to_the_named_shapes():
    kernels = [KernelMetrics("k", shape="small", tensor_pipe_pct=5),
               KernelMetrics("k", shape="large", tensor_pipe_pct=45)]
    gates = Gates(min_tensor_pipe_pct=40, absolute_shapes=["large"])
    report = decide(full(cand_kernels=kernels), gates)
    assert [(r.shape, r.outcome) for r in rows(report, "min_tensor_pipe_pct")] == [("large", RuleOutcome.PASS)]


def test_tensor_pipe_is_weighted_by_duration_over_a_shapes_launches():
    kernels = [KernelMetrics("main", shape="s", duration_ns=900, tensor_pipe_pct=50),
               KernelMetrics("reduce", shape="s", duration_ns=100, tensor_pipe_pct=0)]
    (row,) = rows(decide(full(cand_kernels=kernels), Gates(min_tensor_pipe_pct=40)), "min_tensor_pipe_pct")
    assert row.value == 45.0 and row.outcome is RuleOutcome.PASS


def test_metric_not_collected_is_not_run_rather_than_pass():
    kernels = [KernelMetrics("k", shape="m1024")]
    report = decide(full(cand_kernels=kernels), Gates(max_bank_conflict_pct=10))
    assert rows(report, "max_bank_conflict_pct")[0].outcome is RuleOutcome.NOT_RUN
    assert report.verdict is Verdict.INCOMPLETE


def test_relative_rules_compare_with_the_baseline_profile():
    cand = [KernelMetrics("k", shape="m1024", tensor_pipe_pct=40, ld_bank_conflict_pct=9)]
    base = [KernelMetrics("k", shape="m1024", tensor_pipe_pct=50, ld_bank_conflict_pct=1)]
    gates = Gates(max_tensor_pipe_drop_pct=5, max_bank_conflict_increase_pct=10)
    report = decide(full(cand_kernels=cand, base_kernels=base), gates)
    (drop,) = rows(report, "max_tensor_pipe_drop_pct")
    (increase,) = rows(report, "max_bank_conflict_increase_pct")
    assert (drop.outcome, drop.baseline, drop.delta, drop.threshold) == (RuleOutcome.FAIL, 50, -10, 45)
    assert (increase.outcome, increase.delta) == (RuleOutcome.PASS, 8)


def test_the_reason_names_the_bank_conflicts_before_the_slowdown_they_cause():
    cand = [KernelMetrics("k", shape="m1024", ld_bank_conflict_pct=86.3, st_bank_conflict_pct=0)]
    report = decide(full(timings=[timing(ratio=2.4, lo=2.3, hi=2.5, p=1e-6)], cand_kernels=cand), GATES)
    assert report.verdict is Verdict.REJECT
    assert report.reason.startswith("reject: max_bank_conflict_pct m1024: bank conflicts 86.3 % is over the limit of 10 %")
    assert rows(report, "max_latency_regression_pct")[0].outcome is RuleOutcome.FAIL


def test_conflicts_pool_loads_and_stores_so_a_few_conflicting_stores_do_not_reject():
    # Measured on the H200 (FlashCore wmma, B4 H16 S4096 D64): loads 6,136 of 67.6 M wavefronts; an
    # epilogue whose stores conflicted at 24 % of a far smaller count.
    k = KernelMetrics("k", shape="m1024", ld_bank_conflicts=6_136, ld_wavefronts=67_639_288,
                      st_bank_conflicts=480_000, st_wavefronts=2_000_000, ld_bank_conflict_pct=0.01,
                      st_bank_conflict_pct=24.0)
    assert k.shared_conflict_pct == pytest.approx(100 * 486_136 / 69_639_288)
    report = decide(full(cand_kernels=[k]), GATES)
    (row,) = rows(report, "max_bank_conflict_pct")
    assert row.outcome is RuleOutcome.PASS and row.value < 1


def test_an_unpadded_tile_fails_the_pooled_conflict_rate():
    k = KernelMetrics("k", shape="m1024", ld_bank_conflicts=471_599_946, ld_wavefronts=539_233_098,
                      st_bank_conflicts=0, st_wavefronts=3_000_000)
    (row,) = rows(decide(full(cand_kernels=[k]), GATES), "max_bank_conflict_pct")
    assert row.outcome is RuleOutcome.FAIL and row.value > 80


def test_without_raw_counts_the_worse_direction_decides():
    k = KernelMetrics("k", shape="m1024", ld_bank_conflict_pct=3.0, st_bank_conflict_pct=40.0)
    assert k.shared_conflict_pct == 40.0


def test_an_error_stage_wins_over_a_failure():
    result = full()
    result.candidate.static = static(status=F, reason="compile error")
    result.candidate.profile = ProfileResult(StageStatus.ERROR, reason="ProfilerError: ERR_NVGPUCTRPERM")
    report = decide(result, GATES)
    assert report.verdict is Verdict.ERROR
    assert "ERR_NVGPUCTRPERM" in report.reason


def test_profile_not_run_is_fine_when_no_ncu_gate_is_set():
    result = full()
    result.candidate.profile = ProfileResult(N, reason="not run: profiling disabled")
    gates = Gates(max_latency_regression_pct=3, max_spill_bytes=0)
    assert decide(result, gates).verdict is Verdict.ACCEPT
    assert decide(result, GATES).verdict is Verdict.INCOMPLETE


def test_the_reason_is_whole_and_only_the_github_surface_clips_it():
    result = full()
    result.candidate.static = static(status=F, reason="compile error:\n" + "x" * 300)
    report = decide(result, GATES)
    assert report.reason == "reject: static: compile error: " + "x" * 300     # one line, nothing cut
    status = messages.describe(report)
    assert len(status) == messages.DESCRIPTION_MAX_CHARS and status.endswith("…")


def test_the_deciding_row_is_marked_once_and_the_reason_names_it():
    cand = [KernelMetrics("k", shape="m1024", ld_bank_conflict_pct=86.3, st_bank_conflict_pct=0)]
    report = decide(full(timings=[timing(ratio=2.4, lo=2.3, hi=2.5, p=1e-6)], cand_kernels=cand), GATES)
    (row,) = report.decisive_rows
    assert row.rule == "max_bank_conflict_pct" and row is report.decisive_row
    assert report.reason.startswith(f"reject: {row.rule} {row.shape}: {row.reason}")


def test_accept_marks_its_worst_latency_row():
    report = decide(full(timings=[timing("a", ratio=0.95, lo=0.94, hi=0.96, p=0.001),
                                  timing("b", ratio=1.01, lo=1.00, hi=1.02, p=0.001)]), GATES)
    assert report.verdict is Verdict.ACCEPT
    assert report.decisive_row.shape == "b" and "+1.0 % at worst" in report.reason


def test_latency_timed_on_an_unsteady_gpu_is_inconclusive_never_a_verdict():
    result = full(timings=[timing(ratio=1.10, lo=1.08, hi=1.12, p=0.001)])
    result.bench.gpu_watch = GpuWatch(available=True, problems=["the GPU was shared while timing (pid 7: 900 MiB)"])
    report = decide(result, GATES)
    (row,) = rows(report, "max_latency_regression_pct")
    assert row.outcome is RuleOutcome.INCONCLUSIVE and "pid 7" in row.reason
    assert report.verdict is Verdict.INCONCLUSIVE and "GPU not steady" in report.reason


def test_clocks_that_boost_moved_leave_the_verdict_standing_and_say_so():
    """On an H100 the demo's attention kernels hit the software power cap and the SM clock stepped
    1935..1980 MHz: a +45.7 % regression (CI +43.4..+48.1 %) came out inconclusive, and so did the
    unchanged kernels. Interleaving in random order puts Boost's movement on both sides; the verdict
    stands and says the clocks moved. Sharing still forbids a verdict."""
    boost = GpuWatch(available=True, problems=["SM clock moved 1935..1980 MHz while timing",
                                               "clocks throttled while timing: software power cap"],
                     boost_spread_pct=2.27)
    for shape_timing, outcome, verdict in [
            (timing(ratio=1.457, lo=1.434, hi=1.481, p=1e-11), RuleOutcome.FAIL, Verdict.REJECT),
            (timing(ratio=1.0, lo=0.996, hi=1.004, p=0.6), RuleOutcome.PASS, Verdict.ACCEPT)]:
        result = full(timings=[shape_timing])
        result.bench.gpu_watch = boost
        report = decide(result, GATES)
        (row,) = rows(report, "max_latency_regression_pct")
        assert (row.outcome, report.verdict) == (outcome, verdict), row.reason
        assert "clocks moved by up to 2.27 % (GPU Boost)" in row.reason
    sharing = GpuWatch(available=True, problems=["the GPU was shared while timing (busy 99 %)"])
    result = full(timings=[timing(ratio=1.457, lo=1.434, hi=1.481, p=1e-11)])
    result.bench.gpu_watch = sharing
    assert decide(result, GATES).verdict is Verdict.INCONCLUSIVE


def test_max_smem_bytes_counts_dynamic_shared_memory_per_launch():
    """flash-attention-minimal's tiles are all `extern __shared__`: ptxas says 0 B, the launch 28,672 B."""
    job = full(cand_kernels=[KernelMetrics("forward_kernel", shape="m1024", smem_static_bytes=0,
                                           smem_dynamic_bytes=28_672, smem_per_block_bytes=29_696)])
    job.candidate.static = static(functions=[FunctionResources(FN, "sm_90", 32, 0, 0, 0, 0, {"FFMA": 1})])
    report = decide(job, Gates(max_smem_bytes=16_384))
    rows = [r for r in report.rules if r.rule == "max_smem_bytes"]
    assert [(r.shape, r.outcome) for r in rows] == [("", RuleOutcome.PASS), ("m1024", RuleOutcome.FAIL)]
    assert rows[1].value == 28_672
    assert rows[1].reason == ("forward_kernel: shared memory per block 28 KiB is over the limit of 16 KiB "
                              "(0 B static + 28672 B dynamic)")
    assert report.verdict is Verdict.REJECT
    assert decide(job, Gates(max_smem_bytes=32_768)).verdict is Verdict.ACCEPT


def test_max_smem_bytes_without_launch_figures_keeps_the_static_rows_alone():
    job = full(cand_kernels=[KernelMetrics("k", shape="m1024")])
    rows = [r for r in decide(job, Gates(max_smem_bytes=1 << 20)).rules if r.rule == "max_smem_bytes"]
    assert [(r.shape, r.outcome) for r in rows] == [("", RuleOutcome.PASS), ("", RuleOutcome.PASS)]


def test_the_static_delta_shows_changed_figures_and_opcodes_and_gates_the_increase():
    job = full()
    job.baseline.static = static(functions=[FunctionResources(FN, "sm_90", 56, 10240, 0, 0, 0, {"HMMA": 16, "STS": 4})])
    job.candidate.static = static(functions=[
        FunctionResources(FN, "sm_90", 64, 10240, 0, 0, 0, {"HMMA": 16, "STS": 36, "BAR": 2})])
    report = decide(job, Gates(max_registers_increase=4))
    (delta,) = [r for r in report.rules if r.rule == "static_delta"]
    assert delta.outcome is RuleOutcome.PASS
    assert delta.reason == "sm_90 wmma_gemm_kernel: registers 56->64, STS +32, BAR +2"
    assert (delta.baseline, delta.value, delta.delta) == (56, 64, 8)
    (increase,) = [r for r in report.rules if r.rule == "max_registers_increase"]
    assert increase.outcome is RuleOutcome.FAIL and increase.delta == 8
    assert increase.reason == "sm_90 wmma_gemm_kernel: registers 56 -> 64, an increase of +8, over the limit of +4"
    assert report.verdict is Verdict.REJECT
    assert decide(job, Gates(max_registers_increase=8)).verdict is Verdict.ACCEPT


def test_increase_rules_pass_for_a_new_kernel_and_wait_for_figures_otherwise():
    job = full()
    job.new_kernel = True
    assert [r.outcome for r in decide(job, Gates(max_spill_bytes_increase=0)).rules
            if r.rule == "max_spill_bytes_increase"] == [RuleOutcome.PASS]
    job.new_kernel = False                          # a baseline exists, but its static stage did not run
    assert [r.outcome for r in decide(job, Gates(max_spill_bytes_increase=0)).rules
            if r.rule == "max_spill_bytes_increase"] == [RuleOutcome.NOT_RUN]


def test_an_all_streams_failure_on_a_shared_gpu_is_inconclusive_but_the_floor_still_rejects():
    """Another process time-slicing the GPU lengthens the eager all-streams window and not the
    interleaved events: never a reject on such data. A call faster than the hardware allows is."""
    shared = ["the GPU was shared while timing (pid 7: 900 MiB)"]
    slow_window = timing()
    slow_window.all_streams_us = slow_window.candidate.median_us * 3
    result = full(timings=[slow_window])
    assert decide(result, GATES).verdict is Verdict.REJECT                  # steady GPU: the rule decides
    result.bench.gpu_watch = GpuWatch(available=True, problems=shared)
    report = decide(result, GATES)
    (row,) = rows(report, "all_streams_time")
    assert row.outcome is RuleOutcome.INCONCLUSIVE and "pid 7" in row.reason
    assert report.verdict is Verdict.INCONCLUSIVE
    too_fast = timing()
    too_fast.floor_us = too_fast.candidate.median_us * 2
    result = full(timings=[too_fast])
    result.bench.gpu_watch = GpuWatch(available=True, problems=shared)
    assert decide(result, GATES).verdict is Verdict.REJECT
    assert rows(decide(result, GATES), "physical_floor")[0].outcome is RuleOutcome.FAIL


def test_a_minimum_reads_as_a_floor_and_a_maximum_as_a_limit():
    report = decide(full(), Gates(min_tensor_pipe_pct=55, max_bank_conflict_pct=10))
    (pipe,) = rows(report, "min_tensor_pipe_pct")
    assert pipe.outcome is RuleOutcome.FAIL and pipe.reason == "tensor pipe 50 % is below the floor of 55 %"
    (conflicts,) = rows(report, "max_bank_conflict_pct")
    assert conflicts.reason == "bank conflicts 1 % is within the limit of 10 %"
    report = decide(full(), Gates(min_tensor_pipe_pct=45))
    assert rows(report, "min_tensor_pipe_pct")[0].reason == "tensor pipe 50 % meets the floor of 45 %"


def test_the_static_row_says_what_it_checked_not_how_long_it_took():
    job = full()
    job.candidate.static.duration_s = 2.1
    (row,) = rows(decide(job, GATES), "static")
    assert row.reason == "ptxas compiled 1 kernel function for sm_80, sm_90; SASS read"
    assert (row.value, row.unit) == (2, "functions")
