"""A job's plan (gate/executors/plan.py): the reuse decision from values alone, and the results it
implies made as new values, the history's own left as they were."""

from __future__ import annotations

from pathlib import Path

from service_fakes import SHA_A, SHA_B, job_result

from gate.domain import BuildResult, KernelSpec, ProfileResult, StageStatus
from gate.domain.job import Checkout, RunOptions, method_key
from gate.domain.reuse import HistoryAnswers, Provenance, ReusedMeasurement, ReusedProfile, ReuseKeys
from gate.executors.plan import Sources, plan_job, request_for, reused_result, with_baseline_profile

KEYS = ReuseKeys(job="j" * 64, candidate="c" * 64, baseline="b" * 64)
EARLIER = Provenance(job_id=7, sha="e" * 40, measured_at="2026-11-26T00:00:00")


def _sources(baseline: bool = True) -> Sources:
    return Sources(candidate=Checkout(SHA_B, "/w/candidate"),
                   baseline=Checkout(SHA_A, "/w/baseline") if baseline else None,
                   spec=KernelSpec(name="attn", sources=["attn.cu"]), new_kernel=not baseline)


def _request(baseline: bool = True, kept: dict[str, str] | None = None):  # noqa: ANN202
    return request_for(_sources(baseline), kept or {}, RunOptions(), Path("/w/box"))


def _measured() -> ReusedMeasurement:
    return ReusedMeasurement(job_result("attn", "e" * 40, "d" * 40), EARLIER)


def _profile() -> ReusedProfile:
    return ReusedProfile(ProfileResult(StageStatus.PASSED, log="the earlier candidate's"), EARLIER)


def test_the_request_profiles_a_baseline_whenever_there_is_one_and_keeps_the_histories_methods():
    kept = {method_key("s", "float16"): "graph"}
    request = _request(kept=kept)
    assert request.profile_baseline and request.kept_methods == kept and request.artifacts_dir == "/w/box"
    assert not _request(baseline=False).profile_baseline


def test_an_earlier_result_timed_the_kept_way_stands_and_no_profile_is_taken():
    plan = plan_job(_request(), KEYS, HistoryAnswers(measured=_measured(), baseline_profile=_profile()))
    assert plan.reused is not None and plan.baseline_profile is None and plan.keys == KEYS


def test_an_earlier_result_timed_another_way_is_measured_again_taking_the_baselines_profile():
    shape = job_result().bench.shapes[0]
    other = "graph" if shape.method == "events" else "events"
    request = _request(kept={method_key(shape.shape, shape.dtype): other})
    plan = plan_job(request, KEYS, HistoryAnswers(measured=_measured(), baseline_profile=_profile()))
    assert plan.reused is None and plan.baseline_profile is not None
    assert not plan.request.profile_baseline and request.profile_baseline     # a new request, the old one kept


def test_without_answers_the_pair_is_measured_as_asked():
    plan = plan_job(_request(), KEYS, HistoryAnswers())
    assert plan.reused is None and plan.baseline_profile is None and plan.request.profile_baseline


def test_a_reused_result_names_the_revisions_it_stands_for_and_leaves_the_earlier_one_as_it_was():
    found = _measured()
    result = reused_result(found, _sources())
    assert (result.candidate.sha, result.baseline.sha) == (SHA_B, SHA_A)
    assert result.notes[-1] == EARLIER.line
    assert (found.result.candidate.sha, found.result.baseline.sha) == ("e" * 40, "d" * 40)
    assert EARLIER.line not in found.result.notes


def test_a_baseline_profile_is_put_in_only_where_the_child_would_have_profiled_the_baseline():
    result = job_result()
    assert with_baseline_profile(result, _profile()) is None          # the baseline did not build
    result.baseline.build = BuildResult(StageStatus.PASSED)
    taken = with_baseline_profile(result, _profile())
    assert taken.baseline.profile.log == "the earlier candidate's" and taken.notes[-1] == _profile().line
    assert result.baseline.profile is None and _profile().line not in result.notes


def test_each_side_is_built_from_its_own_manifest_and_both_are_measured_as_the_candidate_declares():
    from dataclasses import replace

    from gate.domain.manifest import Shape
    from gate.domain.names import Side

    measured = KernelSpec(name="attn", sources=["attn.cu", "new.cu"], nvcc_flags=["-Xptxas=-O0"],
                          shapes=[Shape({"m": 64})], dtypes=["bfloat16"], module="cand", own_process=True)
    own = KernelSpec(name="attn", sources=["attn.cu"], nvcc_flags=[], cxx_flags=["-O2"], function="fwd",
                     shapes=[Shape({"m": 8})], dtypes=["float32"], module="", own_process=False)
    request = request_for(replace(_sources(), spec=measured, baseline_spec=own), {}, RunOptions(), Path("/w"))
    base = request.spec(Side.BASELINE)
    assert (base.sources, base.nvcc_flags, base.cxx_flags, base.function, base.module, base.own_process) == (
        ["attn.cu"], [], ["-O2"], "fwd", "", False)
    assert (base.shapes, base.dtypes, base.workload, base.gates) == (
        measured.shapes, measured.dtypes, measured.workload, measured.gates)
    assert request.spec(Side.CANDIDATE) is measured and request.kernel is measured
    alone = _request(baseline=False)
    assert alone.baseline_kernel is None and alone.spec(Side.BASELINE) is alone.kernel
