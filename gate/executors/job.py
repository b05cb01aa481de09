"""The parent side of one job: order -> sources -> plan -> measure -> take back -> judge.

`gate_job(order, context)` is the one entry (tests swap it with GATE_TEST_PIPELINE=module:function).
It checks out both sides, reads their manifests, lets `gate.executors.plan` decide on the history's
answers (docs/reuse.md), measures (the GPU child, or none), takes back the files worth keeping from
the box's folder, which submitted code controls (through `gate.returned_files`, into `artifacts/<key>`;
refused files are named on the job), and judges (`gate.verdict.decide`). The checkouts and the box's
folder go when the job ends; the artifacts stay for the caller to keep.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gate.domain.codec import named_object
from gate.domain.job import CAPTURING_GRAPHS, GateOutcome, JobOrder, JobRequest, ProgressEvent, RunOptions, method_key
from gate.domain.manifest import KernelSpec, Manifest
from gate.domain.names import Side, Stage
from gate.domain.results import Fingerprint, JobResult, StageStatus
from gate.domain.reuse import History, HistoryAnswers
from gate.errors import JobCancelled, ManifestError
from gate.executors.child import run_child
from gate.executors.plan import JobPlan, Sources, plan_job, request_for, reused_result, with_baseline_profile
from gate.executors.reuse_key import environment_inputs, job_keys
from gate.executors.spare import Spare, Spares
from gate.job_folders import remove
from gate.manifest.load import load_manifest
from gate.nvidia.devices import Gpu
from gate.returned_files import Budget, Refused, copy_returned, listed
from gate.sources.mirror import Mirror
from gate.verdict.decide import decide
from gate.verdict.lines import job_diffs

log = logging.getLogger(__name__)
Emit = Callable[[ProgressEvent], None]
TEST_PIPELINE_ENV = "GATE_TEST_PIPELINE"
ARTIFACT_KINDS = {"ptxas.log": "ptxas_log", "build.log": "build_log", "result.json": "result_json",
                  "request.json": "request_json"}
EVENTS_RERUN = "the job ran again, every shape timed with events (no CUDA graph)"


@dataclass
class JobContext:
    """What the caller of a job (an executor, `gate run`) hands it besides its order."""

    data_dir: Path                 # the job's folders go here: workspaces/, box/, artifacts/
    options: RunOptions
    mirror: Mirror
    on_event: Emit = lambda _event: None
    cancel: threading.Event = field(default_factory=threading.Event)   # set: stop, store nothing
    history: History | None = None     # the history of the order's repository; None: always measure
    spares: Spares | None = None       # children started ahead of jobs (`gate.executors.spare`); None: start one
    gpu: Gpu | None = None             # the slot's GPU, the only one its child sees; None: every GPU


GateJob = Callable[[JobOrder, JobContext], GateOutcome]


def load_gate_job() -> GateJob:
    """`gate_job`, or (test seam, only when set) `GATE_TEST_PIPELINE=module:function`."""
    spec = os.environ.get(TEST_PIPELINE_ENV)
    if not spec:
        return gate_job
    log.warning("%s=%s: jobs run a test pipeline, not the real one", TEST_PIPELINE_ENV, spec)
    return named_object(spec)


def gate_job(order: JobOrder, context: JobContext) -> GateOutcome:
    """Gate one kernel at `order.sha` against its baseline on this machine (`JobCancelled` once the
    context's cancel is set). The outcome carries the reuse keys, so that the history can offer this
    measurement to later jobs."""
    # Every path of the request absolute: the child, and its box, run in the box's folder.
    data_dir = Path(context.data_dir).resolve()
    key = f"{order.sha[:12]}-{order.kernel}-{uuid.uuid4().hex[:8]}"
    workspace, box_dir = data_dir / "workspaces" / key, data_dir / "box" / key   # box: nothing in it is believed
    try:
        sources = check_out(order, context.mirror, workspace, context.on_event)
        request = request_for(sources, order.kept_methods, context.options, box_dir)
        keys = job_keys(request, environment_inputs(context.options, context.gpu))
        asked = context.history is not None and keys.job
        plan = plan_job(request, keys, context.history.answers(order.kernel, keys) if asked else HistoryAnswers())
        if plan.reused is not None:
            context.on_event(ProgressEvent(stage=Stage.SOURCE, side=Side.JOINT, state="passed",
                                           detail=f"inputs unchanged: {plan.reused.source.line}"))
            result, kept = reused_result(plan.reused, sources), []
        else:
            with measure(plan, context, hidden=(data_dir,)) as (result, folder, budget):
                result, kept = take_back(result, folder, budget, data_dir / "artifacts" / key, context.on_event)
    finally:
        remove(workspace)
        remove(box_dir)
    return judge(plan, sources, result, kept)


def check_out(order: JobOrder, mirror: Mirror, workspace: Path, emit: Emit) -> Sources:
    """Both sides from the git mirror, and what their manifests say of the kernel."""
    emit(ProgressEvent(stage=Stage.SOURCE, side=Side.JOINT, state="started"))
    candidate = mirror.checkout(order.repo, order.sha, workspace / "candidate")
    spec = kernel_spec(load_manifest(Path(candidate.path)), order.kernel)
    baseline = mirror.checkout(order.repo, order.base_sha, workspace / "baseline") if order.base_sha else None
    declared, note = baseline_declaration(Path(baseline.path), order.kernel) if baseline else (None, "")
    # A root commit, or a baseline whose manifest lacks the kernel: nothing to regress against.
    new_kernel = baseline is None or (declared is None and not note)
    emit(ProgressEvent(stage=Stage.SOURCE, side=Side.JOINT, state="passed", detail=f"{order.sha[:12]}" + (
        ", new kernel: no baseline declares it" if new_kernel else f" vs {order.base_sha[:12]}{note}")))
    return Sources(candidate, None if new_kernel else baseline, spec, new_kernel, declared)


@contextlib.contextmanager
def measure(plan: JobPlan, context: JobContext, hidden: tuple[Path, ...]) -> Iterator[tuple[JobResult, Path, Budget]]:
    """The child's result, its folder and what it handed back so far, while the folder lasts. A
    waiting spare runs it when there is one, and the next job's is started once this child is done."""
    if context.cancel.is_set():
        raise JobCancelled("cancelled before its child started")
    request, spares, budget = plan.request, context.spares, Budget()
    spare = spares.take(context.options) if spares is not None else None
    try:
        if spare is not None:
            request = spare.adopt(request)
        try:
            result = named_gpu(_measured(request, spare, context, hidden, budget), context.gpu)
        finally:
            if spares is not None:
                spares.refill(context.options)
        if plan.baseline_profile is not None and (taken := with_baseline_profile(result, plan.baseline_profile)):
            result = taken
            context.on_event(ProgressEvent(stage=Stage.PROFILE, side=Side.BASELINE, state="passed",
                                           detail=plan.baseline_profile.line))
        yield result, Path(request.artifacts_dir), budget
    finally:
        if spare is not None:         # its child has ended; its folders held this job's checkouts
            spare.discard()


def _measured(request: JobRequest, spare: Spare | None, context: JobContext, hidden: tuple[Path, ...],
              budget: Budget) -> JobResult:
    """The child's result; one that died capturing CUDA graphs (`died_capturing`) is run once more, with events."""
    spec, emit, note = request.kernel, context.on_event, spare.note() if spare is not None else None
    result = run_child(request, timeout_s=spec.timeout_s, on_event=emit, hidden=hidden, cancel=context.cancel,
                       budget=budget, child=spare.child if spare is not None else None, gpu=context.gpu)
    if (died := died_capturing(result)) is None:
        return result if note is None else dataclasses.replace(result, notes=[*result.notes, note])
    emit(ProgressEvent(stage=Stage.BENCH, side=Side.JOINT, state="running", detail=EVENTS_RERUN))
    remove(Path(request.artifacts_dir))
    events = {method_key(shape.label, dtype): "events" for shape in spec.shapes for dtype in spec.dtypes}
    request = dataclasses.replace(request, kept_methods=events)
    result = run_child(request, timeout_s=spec.timeout_s, on_event=emit, hidden=hidden, cancel=context.cancel,
                       budget=budget, gpu=context.gpu)
    return dataclasses.replace(result, notes=[*result.notes, f"{EVENTS_RERUN}: its first child {died}"])


def named_gpu(result: JobResult, gpu: Gpu | None) -> JobResult:
    """`result` naming the slot's GPU where its child did not (it never reached the GPU stages: a
    compile failed): a job of a slot never reads "no GPU" (`Fingerprint.gpu_kind`)."""
    found = result.fingerprint or Fingerprint()
    if gpu is None or found.gpu_name:
        return result
    return dataclasses.replace(result, fingerprint=dataclasses.replace(found, gpu_name=gpu.name,
                                                                       driver=found.driver or gpu.driver))


def died_capturing(result: JobResult) -> str | None:
    """How the child died while the bench captured CUDA graphs (`CAPTURING_GRAPHS`), or None. A call that
    synchronises the host (`cudaDeviceSynchronize` in a CuTe repository's every call) may not run under
    capture, and a kernel whose own error check then exits ends the child: the gate chose the graph, so
    the job runs again timed with events."""
    bench = result.bench
    if bench is None or bench.status is not StageStatus.FAILED or f", {CAPTURING_GRAPHS})" not in bench.reason:
        return None
    return bench.reason


def take_back(result: JobResult, folder: Path, budget: Budget, artifacts: Path,
              emit: Emit) -> tuple[JobResult, list[tuple[str, str]]]:
    """The files worth keeping, copied out through `copy_returned`, and the result noting each refused."""
    kept = []
    for name in listed(folder):
        kind = "ncu_report" if name.endswith(".ncu-rep") else ARTIFACT_KINDS.get(Path(name).name)
        if kind is None:           # not kept, and never read
            continue
        with contextlib.suppress(Refused):      # the budget keeps its reason for the evidence
            kept.append((kind, str(copy_returned(folder, name, artifacts / name, budget))))
    emit(ProgressEvent(stage=Stage.BOX, side=Side.JOINT, state="passed",
                       detail=result.notes[0] if result.notes else "the child wrote no note on its box"))
    refused = budget.evidence()
    for line in refused:
        emit(ProgressEvent(stage=Stage.BOX, side=Side.JOINT, state="refused", detail=line))
    return dataclasses.replace(result, notes=[*result.notes, *refused]), kept


def judge(plan: JobPlan, sources: Sources, result: JobResult, kept: list[tuple[str, str]]) -> GateOutcome:
    """The verdict with the current gates, and where it got slower (for the Check Run summary)."""
    result = dataclasses.replace(result, new_kernel=sources.new_kernel)
    report = decide(result, sources.spec.gates, sources.spec.kernels)
    return GateOutcome(result=result, report=dataclasses.replace(report, lines=job_diffs(result)), artifacts=kept,
                       reuse_key=plan.keys.job, candidate_key=plan.keys.candidate,
                       reused_from=plan.reused.source if plan.reused is not None else None)


def baseline_declaration(repo_dir: Path, kernel: str) -> tuple[KernelSpec | None, str]:
    """The kernel as the manifest at `repo_dir` (the baseline's) declares it, or None when it declares
    no such kernel. A manifest that does not load declares nothing we could build from, but that is
    not a *new* kernel: the baseline is then built as the candidate declares it, and the note says so."""
    try:
        manifest = load_manifest(repo_dir)
    except ManifestError as exc:
        return None, f" (the baseline's gate.toml does not load, so it is built as the candidate's declares: {exc})"
    return next((k for k in manifest.kernels if k.name == kernel), None), ""


def kernel_spec(manifest: Manifest, name: str) -> KernelSpec:
    try:
        return manifest.kernel(name)
    except KeyError:
        known = ", ".join(k.name for k in manifest.kernels)
        raise ManifestError(f"no kernel named {name!r} (declared: {known})", file=manifest.path,
                            key="kernel") from None
