"""The static delta names the judged functions of one revision only: a slowed commit that changed a
kernel's template arguments (`flashattention_kernel<16, 16>` -> `<16, 4>`) left it silent, as no
function was in both builds. Each side is chosen by its own launches."""

from gate.domain import FunctionResources, Gates, StageStatus, StaticResult
from gate.domain.results import JobResult, KernelMetrics, ProfileResult, SideResults
from gate.domain.verdict import RuleOutcome
from gate.verdict.decide import decide

# what ptxas prints, and what Nsight Compute prints for the same launch
K16_16, K16_4 = "_Z21flashattention_kernelILi16ELi16EEvPKf", "_Z21flashattention_kernelILi16ELi4EEvPKf"
NCU = {K16_16: "void flashattention_kernel<(int)16, (int)16>(const float *)",
       K16_4: "void flashattention_kernel<(int)16, (int)4>(const float *)"}
WITH_FLAG, WITHOUT_FLAG = "_Z4attnILb1EEvPf", "_Z4attnILb0EEvPf"
CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_kernel0_0"     # a launch no build of ours compiles
NCU.update({WITH_FLAG: "void attn<(bool)1>(float *)", WITHOUT_FLAG: "void attn<(bool)0>(float *)", CUDNN: CUDNN})


def fn(name, registers=32, hmma=64, arch="sm_90"):
    return FunctionResources(name, arch, registers, 4096, 0, 0, 0, {"HMMA": hmma, "LDSM": 16})


def profile(*mangled):
    return ProfileResult(StageStatus.PASSED, kernels=[KernelMetrics(NCU[m].split("<")[0].split()[-1],
                                                                    demangled=NCU[m], mangled=m) for m in mangled])


def side(sha, functions, launched=()):
    return SideResults(sha=sha * 40, static=StaticResult(StageStatus.PASSED, functions=functions, sass_available=True),
                       profile=profile(*launched) if launched else None)


def delta(report):
    return [r.reason for r in report.rules if r.rule == "static_delta"]


def test_a_re_instantiated_kernel_reads_as_one_gone_and_one_new_with_its_figures():
    result = JobResult(kernel="attn", candidate=side("c", [fn(K16_4, registers=96, hmma=16)], [K16_4]),
                       baseline=side("b", [fn(K16_16, registers=128)], [K16_16]))
    report = decide(result, Gates(max_registers_increase=8))
    assert delta(report) == [
        "sm_90 flashattention_kernel<16, 4>: only in the candidate: registers 96, spill bytes 0, smem bytes 4096, "
        "HMMA x16, LDSM x16",
        "sm_90 flashattention_kernel<16, 16>: only in the baseline: registers 128, spill bytes 0, smem bytes 4096, "
        "HMMA x64, LDSM x16"]
    rows = {r.reason.split(":")[0]: r for r in report.rules if r.rule == "static_delta"}
    assert (rows["sm_90 flashattention_kernel<16, 4>"].value, rows["sm_90 flashattention_kernel<16, 16>"].baseline) \
        == (96, 128)
    # the increase rules compare pairs only, as before: no pair, no increase row; the new rows are passes
    assert [r for r in report.rules if r.rule == "max_registers_increase"] == []
    assert {r.outcome for r in report.rules if r.rule == "static_delta"} == {RuleOutcome.PASS}


def test_without_a_baseline_profile_the_baseline_is_chosen_by_the_candidates_launches():
    # `<16, 16>` is not the launched instance: the candidate's rules fall back to the kernel's name
    result = JobResult(kernel="attn", candidate=side("c", [fn(K16_4)], [K16_4]),
                       baseline=side("b", [fn(K16_16), fn("_Z5otherv")]))
    assert [r.split(":")[:2] for r in delta(decide(result, Gates()))] == [
        ["sm_90 flashattention_kernel<16, 4>", " only in the candidate"],
        ["sm_90 flashattention_kernel<16, 16>", " only in the baseline"]]


def test_a_dispatch_that_launches_another_compiled_instance_is_named_on_both_sides():
    both = [fn(WITH_FLAG), fn(WITHOUT_FLAG, registers=40)]
    result = JobResult(kernel="attn", candidate=side("c", both, [WITHOUT_FLAG]),
                       baseline=side("b", [fn(WITH_FLAG), fn(WITHOUT_FLAG, registers=40)], [WITH_FLAG]))
    assert [r.split(": ")[:2] for r in delta(decide(result, Gates()))] == [
        ["sm_90 attn<false>", "launched by the candidate only"], ["sm_90 attn<true>", "launched by the baseline only"]]


def test_without_profiles_both_sides_judge_every_function_and_only_one_build_s_are_named():
    result = JobResult(kernel="attn", candidate=side("c", [fn(WITH_FLAG), fn(K16_4)]),
                       baseline=side("b", [fn(WITH_FLAG), fn(K16_16)]))
    assert [r.split(": ")[:2] for r in delta(decide(result, Gates()))] == [
        ["sm_90 flashattention_kernel<16, 4>", "only in the candidate"],
        ["sm_90 flashattention_kernel<16, 16>", "only in the baseline"]]


def test_a_baseline_profile_of_other_kernels_only_leaves_the_baseline_to_the_candidates_launches():
    result = JobResult(kernel="attn", candidate=side("c", [fn(K16_4), fn(WITH_FLAG)], [K16_4]),
                       baseline=side("b", [fn(K16_4), fn(WITH_FLAG), fn(WITHOUT_FLAG)], [CUDNN]))
    assert delta(decide(result, Gates())) == []       # not every baseline function "only in the baseline"


def test_many_functions_of_one_revision_are_counted_past_the_first_eight():
    added = [f"_Z1kILi{i}EEvv" for i in range(12)]
    result = JobResult(kernel="attn", candidate=side("c", [fn(WITH_FLAG)] + [fn(n) for n in added]),
                       baseline=side("b", [fn(WITH_FLAG)]))
    reasons = delta(decide(result, Gates()))
    assert len(reasons) == 9 and reasons[:2] == [
        "sm_90 k<0>: only in the candidate: registers 32, spill bytes 0, smem bytes 4096, HMMA x64, LDSM x16",
        "sm_90 k<1>: only in the candidate: registers 32, spill bytes 0, smem bytes 4096, HMMA x64, LDSM x16"]
    assert reasons[-1] == "4 more functions of the candidate that the other revision does not judge (sm_90)"


def test_a_new_kernel_and_a_failed_baseline_compile_name_nothing():
    result = JobResult(kernel="attn", candidate=side("c", [fn(K16_4)], [K16_4]),
                       baseline=side("b", [fn(K16_16)], [K16_16]), new_kernel=True)
    assert delta(decide(result, Gates())) == []
    result.new_kernel = False
    result.baseline.static = StaticResult(StageStatus.FAILED, reason="compile error")
    increase = [r for r in decide(result, Gates(max_registers_increase=8)).rules if r.rule == "max_registers_increase"]
    assert delta(decide(result, Gates())) == [] and [r.outcome for r in increase] == [RuleOutcome.NOT_RUN]


def test_a_change_of_the_manifests_flags_is_a_static_delta_row_even_without_figures():
    from gate.verdict.static_rules import flag_rows

    base = StaticResult(StageStatus.NOT_RUN, flags={"nvcc_flags": ["-O3", "-DTILE=64"], "cxx_flags": []})
    cand = StaticResult(StageStatus.NOT_RUN, flags={"nvcc_flags": ["-O3", "-Xptxas=-O0"], "cxx_flags": []})
    (row,) = flag_rows(cand, base)
    assert (row.rule, row.outcome, row.reason) == ("static_delta", RuleOutcome.PASS,
                                                   "nvcc_flags: + -Xptxas=-O0, - -DTILE=64")
    assert (row.value, row.baseline) == ("-O3 -Xptxas=-O0", "-O3 -DTILE=64")
    result = JobResult("k", SideResults("c" * 40, static=cand), SideResults("b" * 40, static=base))
    assert row in decide(result, Gates()).rules
    assert flag_rows(cand, cand) == [] and flag_rows(cand, StaticResult(StageStatus.PASSED, flags={})) == []
    assert flag_rows(StaticResult(StageStatus.PASSED), StaticResult(StageStatus.PASSED)) == []   # stored before flags
