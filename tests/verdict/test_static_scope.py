"""Static rules judge the kernels the workload launches (issue 26): spills in template instances
nobody launches stay out of the rule table; a kernel in an anonymous namespace matches across builds
(nvcc hashes the file into the namespace's mangled name); unchanged increase rows collapse."""

from dataclasses import replace

import pytest

from gate.domain import FunctionResources, Gates, StageStatus, StaticResult
from gate.domain.results import JobResult, KernelMetrics, ProfileResult, SideResults
from gate.domain.verdict import RuleOutcome
from gate.nvidia.symbols import match_key
from gate.verdict.decide import decide
from gate.verdict.static_rows import collapse_unchanged
from gate.verdict.static_scope import Launched, launched_names, static_scope

# Two builds of one file (CUDA 13.0 names): the anonymous namespace carries a per-file hash.
ANON_A = "_ZN36_GLOBAL__N__5794feb6_4_a_cu_d589cb6015conv_fwd_kernelILi4EEEvPf"
ANON_B = "_ZN36_GLOBAL__N__0badf00d_4_a_cu_12345678" + "15conv_fwd_kernelILi4EEEvPf"
ANON_W3 = ANON_A.replace("ILi4E", "ILi3E")
NESTED = "_ZN2ns1kIN36_GLOBAL__N__5794feb6_4_a_cu_d589cb603CfgEEEvPf"


def fn(name, arch="sm_90", registers=32, spills=0):
    return FunctionResources(name, arch, registers, 0, 0, spills, 0, {})


def test_match_key_drops_anonymous_namespaces_in_either_form():
    assert match_key(ANON_A) == match_key(ANON_B) == "conv_fwd_kernel<4>"
    assert match_key(NESTED) == "ns::k<Cfg>"
    assert match_key("void (anonymous namespace)::conv_fwd_kernel<4>(float *)") == "conv_fwd_kernel<4>"
    assert match_key(ANON_W3) != match_key(ANON_A)          # other template arguments stay apart


def test_match_key_without_a_demangler_canonicalises_the_mangled_name(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_demangler(name, *args, **kw):
        if name in ("cxxfilt", "itanium_demangler"):      # neither the C++ library's nor the fallback
            raise ImportError(name)
        return real_import(name, *args, **kw)
    monkeypatch.setattr(builtins, "__import__", no_demangler)
    match_key.cache_clear()                 # names demangled before this test are cached
    try:
        assert match_key(ANON_A) == match_key(ANON_B) == "_ZN12_GLOBAL__N_115conv_fwd_kernelILi4EEEvPf"
    finally:
        match_key.cache_clear()


def profile(*demangled, mangled=()):
    names = list(mangled) or [""] * len(demangled)
    return ProfileResult(StageStatus.PASSED, kernels=[KernelMetrics(kernel=d.split("<")[0], demangled=d, mangled=m)
                                                      for d, m in zip(demangled, names)])


def test_only_the_launched_instances_are_judged():
    static = StaticResult(StageStatus.PASSED, functions=[fn(ANON_A), fn(ANON_W3, spills=11872)])
    scope = static_scope(static, launched_names(profile("void (anonymous namespace)::conv_fwd_kernel<4>(float *)")), [])
    assert [f.function for f in scope.judged] == [ANON_A]
    assert [f.function for f in scope.not_judged] == [ANON_W3]


def test_a_launchs_mangled_name_chooses_among_functions_its_demangled_name_cannot_tell_apart():
    # two files' anonymous namespaces, each with a conv_fwd_kernel<4>, compiled into one extension
    static = StaticResult(StageStatus.PASSED, functions=[fn(ANON_A), fn(ANON_B), fn(ANON_W3)])
    demangled = "void (anonymous namespace)::conv_fwd_kernel<(int)4>(float *)"
    by_mangled = static_scope(static, launched_names(profile(demangled, mangled=[ANON_B])), [])
    assert [f.function for f in by_mangled.judged] == [ANON_B]
    stored_before = static_scope(static, launched_names(profile(demangled)), [])   # no mangled name: both
    assert [f.function for f in stored_before.judged] == [ANON_A, ANON_B]


def test_a_mangled_name_from_another_build_matches_across_the_anonymous_namespaces_hash():
    other_build = ANON_B.replace("0badf00d", "feedbeef")
    static = StaticResult(StageStatus.PASSED, functions=[fn(ANON_A), fn(ANON_W3)])
    scope = static_scope(static, {Launched("unreadable<>", other_build)}, [])
    assert [f.function for f in scope.judged] == [ANON_A]


def test_a_mangled_name_matches_where_the_two_demanglers_write_a_type_differently():
    # ncu writes `Tile<const float *>`, c++filt `Tile<float const*>`: only the mangled names agree
    floats, doubles = "_Z1kI4TileIPKfEEvPf", "_Z1kI4TileIPKdEEvPf"
    static = StaticResult(StageStatus.PASSED, functions=[fn(floats), fn(doubles)])
    launch = profile("void k<Tile<const float *>>(float *)", mangled=[floats])
    assert [f.function for f in static_scope(static, launched_names(launch), []).judged] == [floats]


def test_manifest_patterns_choose_over_the_profile():
    static = StaticResult(StageStatus.PASSED, functions=[fn(ANON_A), fn(ANON_W3)])
    scope = static_scope(static, {Launched("conv_fwd_kernel<4>")}, ["*conv_fwd_kernel<3>"])
    assert [f.function for f in scope.judged] == [ANON_W3]
    assert "the manifest's kernels" in scope.basis


def test_without_a_launch_record_everything_is_judged_and_said():
    static = StaticResult(StageStatus.PASSED, functions=[fn(ANON_A), fn(ANON_W3)])
    scope = static_scope(static, set(), [])
    assert len(scope.judged) == 2 and not scope.not_judged
    assert scope.basis == "every compiled function (no launch record)"
    unmatched = static_scope(static, {Launched("other_kernel<1>")}, [])
    assert len(unmatched.judged) == 2 and "no launched kernel matched" in unmatched.basis


def job(cand_fns, base_fns, launched=()):
    return JobResult(kernel="conv", candidate=SideResults(sha="c" * 40, static=StaticResult(
        StageStatus.PASSED, functions=cand_fns, sass_available=True), profile=profile(*launched) if launched else None),
        baseline=SideResults(sha="b" * 40, static=StaticResult(StageStatus.PASSED, functions=base_fns,
                                                               sass_available=True)))


def test_spills_of_an_instance_never_launched_do_not_fail_the_rule():
    result = job([fn(ANON_A), fn(ANON_W3, spills=11872)], [fn(ANON_B), fn(ANON_W3, spills=11872)],
                 launched=["void (anonymous namespace)::conv_fwd_kernel<4>(float *)"])
    report = decide(result, Gates(max_spill_bytes=0))
    spill = [r for r in report.rules if r.rule == "max_spill_bytes"]
    assert [r.outcome for r in spill] == [RuleOutcome.PASS]
    static_row = next(r for r in report.rules if r.rule == "static")
    assert "judged 1, the kernels the workload launched; 1 not judged" in static_row.reason


def test_the_static_delta_matches_a_kernel_in_an_anonymous_namespace_across_builds():
    result = job([fn(ANON_A, registers=40)], [fn(ANON_B, registers=32)])
    report = decide(result, Gates(max_registers_increase=4))
    increase = [r for r in report.rules if r.rule == "max_registers_increase"]
    assert [(r.outcome, r.delta) for r in increase] == [(RuleOutcome.FAIL, 8)]
    assert any(r.rule == "static_delta" and "registers 32->40" in r.reason for r in report.rules)


def test_unchanged_increase_rows_collapse_into_one_per_rule():
    names = [ANON_A.replace("ILi4E", f"ILi{i}E") for i in range(1, 9)]
    cand = [fn(n, arch) for n in names for arch in ("sm_80", "sm_90")]
    base = [fn(n, arch) for n in names for arch in ("sm_80", "sm_90")]
    cand[0] = fn(names[0], "sm_80", registers=48)
    report = decide(job(cand, base), Gates(max_registers_increase=32, max_spill_bytes_increase=0))
    regs = [r for r in report.rules if r.rule == "max_registers_increase"]
    spills = [r for r in report.rules if r.rule == "max_spill_bytes_increase"]
    assert [r.delta for r in regs] == [16, 0]
    assert regs[1].reason == "15 instances unchanged (sm_80, sm_90): equal to the baseline's"
    assert [r.reason for r in spills] == ["16 instances unchanged (sm_80, sm_90): equal to the baseline's"]


def test_a_single_unchanged_row_keeps_its_own_reason_and_failures_stay():
    from gate.domain.verdict import RuleRow
    one = RuleRow("max_registers_increase", RuleOutcome.PASS, "sm_90 k: registers 32 -> 32", value=32, delta=0)
    failed = RuleRow("max_spill_bytes_increase", RuleOutcome.FAIL, "sm_90 k: spills", value=8, delta=0)
    assert collapse_unchanged([one, failed]) == [
        RuleRow("max_registers_increase", RuleOutcome.PASS, "sm_90 k: registers 32 -> 32", value=32, delta=0),
        failed]


RECORDED = ("h200-wmma-transpose-full.ncu-rep", "h200-sdpa-gate-metrics.ncu-rep")


def recorded_launches(ncu_fixture):
    """The launches of the H200 reports, read where an `ncu_report` module is importable."""
    from gate.errors import ToolMissingError
    from gate.nvidia.ncu_report import read_report

    try:
        return [k for name in RECORDED for k in read_report(ncu_fixture(name))]
    except ToolMissingError as exc:
        pytest.skip(str(exc))


def test_each_launch_of_the_recorded_reports_judges_exactly_its_own_function(ncu_fixture):
    launches = recorded_launches(ncu_fixture)
    assert any("(int)64" in k.demangled and "(bool)0" in k.demangled for k in launches)   # ncu's own form
    flash = next(k.mangled for k in launches if k.kernel.startswith("flash_fwd_splitkv_kernel<"))
    # what ptxas would print for these kernels, and instances nobody launched: another tile, another flag
    compiled = list(dict.fromkeys(k.mangled for k in launches)) + [
        flash.replace("ILi64ELi64ELi256", "ILi128ELi64ELi256"), flash.replace("ELb1ELb0EEEv", "ELb0ELb0EEEv")]
    static = StaticResult(StageStatus.PASSED, functions=[fn(name) for name in compiled])
    for launch in launches:
        stored_before = replace(launch, mangled="")           # matched by Nsight Compute's demangled name
        for kernel in (launch, stored_before):
            judged = static_scope(static, launched_names(ProfileResult(StageStatus.PASSED, kernels=[kernel])), [])
            assert [f.function for f in judged.judged] == [launch.mangled], kernel.demangled
            assert judged.basis == "the kernels the workload launched"
