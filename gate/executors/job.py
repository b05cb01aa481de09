"""The parent side of one job, on the worker: checkouts -> the GPU child -> `decide`.

`gate_job` checks out the candidate and its baseline from the git mirror (`gate.sources`), reads the
manifest, runs every measuring stage in a child process (`gate.executors.child`, which starts
`python -m gate.runner`), and decides the verdict with the pure `gate.verdict.decide`. Storing the
outcome and notifying is the executor's (`gate.executors.base.run_claimed`); `gate run` calls this
directly.

The child writes into the box's folder (`box/<key>`), which submitted code controls: the parent takes
back only the files it keeps an artifact of, through `gate.returned_files` (regular files, no link
followed, capped per file and per job), into `artifacts/<key>`, which the box never sees. Files it
refuses are named on the job (a `box` event) and in the result's notes. The checkouts and the box's
folder are removed when the job ends; the artifacts stay for the caller to keep.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from gate.domain.job import (CAPTURING_GRAPHS, GateOutcome, JobRequest, ProgressEvent, RunOptions, method_key,
                             methods_agree)
from gate.domain.manifest import KernelSpec, Manifest
from gate.domain.names import Side, Stage
from gate.domain.results import JobResult, StageStatus
from gate.domain.reuse import ProfileLookup, ReuseLookup, ReusedMeasurement
from gate.errors import JobCancelled, ManifestError
from gate.executors.child import run_child
from gate.executors.spare import Spare, Spares
from gate.job_folders import remove
from gate.returned_files import Budget, Refused, copy_returned, listed
from gate.executors.reuse_key import environment_inputs, reuse_key, side_key
from gate.verdict.decide import decide
from gate.verdict.lines import job_diffs
from gate.manifest.load import load_manifest
from gate.sources.mirror import Mirror

Emit = Callable[[ProgressEvent], None]

ARTIFACT_KINDS = {"ptxas.log": "ptxas_log", "build.log": "build_log", "result.json": "result_json",
                  "request.json": "request_json"}


def manifest_at(mirror: Mirror, repo: str, sha: str, scratch: Path) -> Manifest:
    """The manifest of `repo` at `sha` (read from a throw-away checkout)."""
    workspace = scratch / f"manifest-{uuid.uuid4().hex[:8]}"
    try:
        mirror.checkout(repo, sha, workspace)
        return load_manifest(workspace)
    finally:
        remove(workspace)


def artifact_kind(name: str) -> str | None:
    """The kind of artifact a file the child wrote is kept as; None: not kept (and never read)."""
    return "ncu_report" if name.endswith(".ncu-rep") else ARTIFACT_KINDS.get(Path(name).name)


def take_back(box_dir: Path, artifacts_dir: Path, budget: Budget) -> list[tuple[str, str]]:
    """Copy the files worth keeping out of the box's folder, each through `copy_returned`; what it
    refuses stays in `budget.refused`."""
    kept = []
    for name in listed(box_dir):
        kind = artifact_kind(name)
        if kind is None:
            continue
        try:
            kept.append((kind, str(copy_returned(box_dir, name, artifacts_dir / name, budget))))
        except Refused:
            continue
    return kept


def gate_job(*, repo: str, sha: str, base_sha: str | None, kernel: str, data_dir: Path,
             options: RunOptions, mirror: Mirror, on_event: Emit | None = None,
             job_key: str | None = None, cancel: threading.Event | None = None,
             kept_methods: dict[str, str] | None = None, reuse: ReuseLookup | None = None,
             reuse_profile: ProfileLookup | None = None, spares: Spares | None = None) -> GateOutcome:
    """Gate one kernel at `sha` (a full sha) against `base_sha` on this machine. `cancel` stops it
    (`JobCancelled`): before the child starts, or by killing the child's process group.
    `kept_methods`: the timing method per shape of this kernel's history (`storage.timing_methods`).

    `reuse` (None: always measure) is asked for an earlier job with this job's reuse key
    (`gate.executors.reuse_key`); when it has one, no child starts and that job's result is decided
    again with the current gates. The key comes back on the outcome either way, so that the history
    can offer this measurement to later jobs.

    `reuse_profile` (None: always profile the baseline) is asked, when the pair is measured, for an
    earlier job whose candidate had this baseline's inputs (`side_key`): the child then profiles the
    candidate only, and that job's stored candidate profile becomes the baseline's, before `decide`.

    `spares` (None: a child is started for this job) holds a child started before this job
    (`gate.executors.spare`): the job exports its checkouts into that child's folders and tells it to
    go; when the child is done, the next job's is started. A job that runs no child leaves it waiting."""
    emit = on_event or (lambda _event: None)
    # Every path of the request absolute: the child, and its box, run in the artifacts directory.
    data_dir = Path(data_dir).resolve()
    key = job_key or f"{sha[:12]}-{kernel}-{uuid.uuid4().hex[:8]}"
    workspace = data_dir / "workspaces" / key
    box_dir = data_dir / "box" / key            # written by submitted code: nothing in it is believed
    spare = None
    artifacts = data_dir / "artifacts" / key    # what the parent took back from it
    budget = Budget()
    try:
        emit(ProgressEvent(stage=Stage.SOURCE, side=Side.JOINT, state="started"))
        candidate = mirror.checkout(repo, sha, workspace / "candidate")
        spec = _kernel_spec(load_manifest(Path(candidate.path)), kernel)
        baseline = mirror.checkout(repo, base_sha, workspace / "baseline") if base_sha else None
        # A root commit, or a baseline whose manifest lacks the kernel: nothing to regress against.
        new_kernel = baseline is None or not declares(Path(baseline.path), kernel)
        if new_kernel:
            baseline = None
        emit(ProgressEvent(stage=Stage.SOURCE, side=Side.JOINT, state="passed", detail=f"{sha[:12]}" + (
            f" vs {base_sha[:12]}" if baseline else ", new kernel: no baseline declares it")))
        request = JobRequest(kernel=spec, candidate=candidate, baseline=baseline,
                             artifacts_dir=str(box_dir), options=options,
                             # the baseline's profile feeds the relative ncu rules and, whatever the
                             # rules, the source-line diff (verdict/lines.py) names lines against it
                             profile_baseline=baseline is not None,
                             kept_methods=dict(kept_methods or {}))
        environment = environment_inputs(options)
        reuse_as = reuse_key(request, environment)
        candidate_key = side_key(spec, Path(candidate.path), environment)
        found = reuse(kernel, reuse_as) if reuse is not None and reuse_as else None
        if found is not None and not methods_agree(found.result, request.kept_methods):
            found = None     # timed another way than the history now keeps: measure
        base_key = side_key(spec, Path(baseline.path), environment) if baseline is not None else ""
        base_profile = None
        if found is None and reuse_profile is not None and request.profile_baseline and base_key:
            base_profile = reuse_profile(kernel, base_key)
        if base_profile is not None:
            # The key above was made with the baseline profiled: the result has its profile either way.
            request = dataclasses.replace(request, profile_baseline=False)
        if found is not None:
            emit(ProgressEvent(stage=Stage.SOURCE, side=Side.JOINT, state="passed",
                               detail=f"inputs unchanged: {found.source.line}"))
            result = _reused_result(found, sha, baseline.sha if baseline else None)
        else:
            if cancel is not None and cancel.is_set():
                raise JobCancelled("cancelled before its child started")
            if spares is not None and (spare := spares.take(options)) is not None:
                request, box_dir = spare.adopt(request), spare.folder / "box"
            try:
                result = _measured(request, spec, emit, (data_dir,), cancel, budget, spare)
            finally:
                if spares is not None:   # the next job's child, now that this one's is done
                    spares.refill(options)
            if base_profile is not None and _profiles_baseline(result):
                result.baseline.profile = base_profile.profile
                result.notes.append(base_profile.line)
                emit(ProgressEvent(stage=Stage.PROFILE, side=Side.BASELINE, state="passed", detail=base_profile.line))
        result.new_kernel = new_kernel
        kept = take_back(box_dir, artifacts, budget) if found is None else []   # a reused result ran no box
        if found is None:
            emit(ProgressEvent(stage=Stage.BOX, side=Side.JOINT, state="passed",
                               detail=result.notes[0] if result.notes else "the child wrote no note on its box"))
        for line in budget.evidence():
            emit(ProgressEvent(stage=Stage.BOX, side=Side.JOINT, state="refused", detail=line))
            result.notes.append(line)
    finally:
        if spare is not None:         # its child has ended; its folders held this job's checkouts
            spare.discard()
        remove(workspace)
        remove(box_dir)
    report = decide(result, spec.gates, spec.kernels)
    report.lines = job_diffs(result)      # where it got slower, for the Check Run summary
    return GateOutcome(result=result, report=report, artifacts=kept, reuse_key=reuse_as,
                       candidate_key=candidate_key, reused_from=found.source if found else None)


EVENTS_RERUN = "the job ran again, every shape timed with events (no CUDA graph)"


def _measured(request: JobRequest, spec: KernelSpec, emit: Emit, hidden: tuple[Path, ...],
              cancel: threading.Event | None, budget: Budget, spare: Spare | None) -> JobResult:
    """The child's result (`spare`'s, when one was taken); a child that died while capturing CUDA
    graphs died of the gate's choice of method, not of the kernel: the job runs once more, with events."""
    note = spare.note() if spare is not None else None
    result = run_child(request, timeout_s=spec.timeout_s, on_event=emit, hidden=hidden, cancel=cancel,
                       budget=budget, child=spare.child if spare is not None else None)
    if (died := died_capturing(result)) is None:
        if note is not None:     # when it was started: the job's own note of its spare
            result.notes.append(note)
        return result
    emit(ProgressEvent(stage=Stage.BENCH, side=Side.JOINT, state="running", detail=EVENTS_RERUN))
    remove(Path(request.artifacts_dir))
    request = dataclasses.replace(request, kept_methods=events_everywhere(spec))
    result = run_child(request, timeout_s=spec.timeout_s, on_event=emit, hidden=hidden, cancel=cancel, budget=budget)
    result.notes.append(f"{EVENTS_RERUN}: its first child {died}")
    return result


def died_capturing(result: JobResult) -> str | None:
    """How the child died while the bench captured CUDA graphs (`CAPTURING_GRAPHS`), or None. A call
    that synchronises the host (`cudaDeviceSynchronize` in a CuTe repository's every call) may not run
    under capture, and a kernel whose own error check then exits ends the child: the gate chose the
    graph, so the job runs again timed with events, which such a call allows."""
    bench = result.bench
    if bench is None or bench.status is not StageStatus.FAILED or f", {CAPTURING_GRAPHS})" not in bench.reason:
        return None
    return bench.reason


def events_everywhere(spec: KernelSpec) -> dict[str, str]:
    """`JobRequest.kept_methods` that times every shape of `spec` with events."""
    return {method_key(shape.label, dtype): "events" for shape in spec.shapes for dtype in spec.dtypes}


def _profiles_baseline(result: JobResult) -> bool:
    """Whether the child would have profiled the baseline had it been asked: it built, and the child
    reached the profile stage (it ran the candidate's; it skips both after a failed correctness)."""
    base, cand = result.baseline, result.candidate.profile
    return (base is not None and base.build is not None and base.build.status is StageStatus.PASSED
            and cand is not None and cand.status is not StageStatus.NOT_RUN)


def _reused_result(found: ReusedMeasurement, sha: str, base_sha: str | None) -> JobResult:
    """The earlier job's result, told of the revisions it now stands for (their inputs are the same
    bytes, by the key) and of where its figures came from."""
    result = found.result
    result.candidate.sha = sha
    if result.baseline is not None and base_sha:
        result.baseline.sha = base_sha
    result.notes = [*result.notes, found.source.line]
    return result


def declares(repo_dir: Path, kernel: str) -> bool:
    """Whether the manifest at `repo_dir` declares `kernel`. A baseline whose manifest is unreadable
    declares nothing we could compare with, but that is not a *new* kernel: the caller keeps it and
    its build fails visibly."""
    try:
        return any(k.name == kernel for k in load_manifest(repo_dir).kernels)
    except ManifestError:
        return True


def _kernel_spec(manifest: Manifest, name: str) -> KernelSpec:
    try:
        return manifest.kernel(name)
    except KeyError:
        known = ", ".join(k.name for k in manifest.kernels)
        raise ManifestError(f"no kernel named {name!r} (declared: {known})", file=manifest.path,
                            key="kernel") from None
