"""A job's plan, decided before anything is measured: pure functions of values, no I/O.

`request_for` makes the child's request; `plan_job` decides on the history's answers (docs/reuse.md):
an earlier job's whole result stands (no child starts), or the pair is measured, with an earlier
candidate's profile standing for the baseline's when one had its inputs. `reused_result` and
`with_baseline_profile` make the results those decisions imply.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from gate.domain.job import Checkout, JobRequest, RunOptions, methods_agree
from gate.domain.manifest import KernelSpec, built_as
from gate.domain.results import JobResult, StageStatus
from gate.domain.reuse import HistoryAnswers, ReusedMeasurement, ReusedProfile, ReuseKeys


@dataclass(frozen=True)
class Sources:
    """What a job's checkouts hold: both sides and the kernel as the candidate's manifest declares it."""

    candidate: Checkout
    baseline: Checkout | None     # None: a root commit, or a baseline whose manifest lacks the kernel
    spec: KernelSpec
    new_kernel: bool              # no baseline declares the kernel: nothing to regress against
    baseline_spec: KernelSpec | None = None   # the kernel as the baseline's own manifest declares it


@dataclass(frozen=True)
class JobPlan:
    """What the job does: measure `request`, or stand on `reused`."""

    request: JobRequest
    keys: ReuseKeys
    reused: ReusedMeasurement | None = None             # an earlier job's result stands for this one
    baseline_profile: ReusedProfile | None = None       # an earlier candidate's profile stands for the baseline's


def request_for(sources: Sources, kept_methods: dict[str, str], options: RunOptions, box_dir: Path) -> JobRequest:
    """The child's request; `kept_methods` is the order's timing method per shape (docs/reuse.md). Each
    side is built as its own commit declares it (`manifest.BUILD_FIELDS`), and both are measured as the
    candidate declares (docs/manifest.md). A baseline is always profiled:
    its profile feeds the relative ncu rules and, whatever the rules, the source-line diff
    (verdict/lines.py) names lines against it."""
    own = sources.baseline_spec if sources.baseline is not None else None
    return JobRequest(kernel=sources.spec, candidate=sources.candidate, baseline=sources.baseline,
                      artifacts_dir=str(box_dir), options=options, profile_baseline=sources.baseline is not None,
                      kept_methods=dict(kept_methods),
                      baseline_kernel=built_as(sources.spec, own) if own is not None else None)


def plan_job(request: JobRequest, keys: ReuseKeys, answers: HistoryAnswers) -> JobPlan:
    """The reuse decision. A result timed another way than the history now keeps is measured again;
    a baseline profile is taken only when the pair is measured. The keys were made with the baseline
    profiled: the result has its profile either way."""
    found = answers.measured
    if found is not None and not methods_agree(found.result, request.kept_methods):
        found = None
    if found is not None:
        return JobPlan(request, keys, reused=found)
    profile = answers.baseline_profile if request.profile_baseline else None
    if profile is not None:
        request = dataclasses.replace(request, profile_baseline=False)
    return JobPlan(request, keys, baseline_profile=profile)


def reused_result(found: ReusedMeasurement, sources: Sources) -> JobResult:
    """The earlier job's result, told of the revisions it now stands for (their inputs are the same
    bytes, by the key) and of where its figures came from."""
    result = found.result
    baseline = result.baseline
    if baseline is not None and sources.baseline is not None:
        baseline = dataclasses.replace(baseline, sha=sources.baseline.sha)
    return dataclasses.replace(result, candidate=dataclasses.replace(result.candidate, sha=sources.candidate.sha),
                               baseline=baseline, notes=[*result.notes, found.source.line])


def with_baseline_profile(result: JobResult, profile: ReusedProfile) -> JobResult | None:
    """`result` with `profile` as its baseline's, when the child would have profiled the baseline had
    it been asked: it built, and the child reached the profile stage (it ran the candidate's; it skips
    both after a failed correctness). None otherwise."""
    base, cand = result.baseline, result.candidate.profile
    if not (base is not None and base.build is not None and base.build.status is StageStatus.PASSED
            and cand is not None and cand.status is not StageStatus.NOT_RUN):
        return None
    return dataclasses.replace(result, baseline=dataclasses.replace(base, profile=profile.profile),
                               notes=[*result.notes, profile.line])
