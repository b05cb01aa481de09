"""The one module that knows the order of the stages.

Child side, `measure`: static (candidate) -> with a GPU: build (candidate, baseline) -> correctness
-> bench (candidate vs baseline vs peers, interleaved) -> profile (candidate, baseline) ->
fingerprint. Without a GPU those stages are NOT_RUN "not run: no CUDA device". The GPU stage modules
are imported inside the GPU branch only, so a CPU machine never imports torch.

Parent side, `gate_job`: source checkout (candidate + baseline) -> manifest -> the child
(`gate.runner`) -> `decide` -> the outcome with its artifacts; workspaces are removed afterwards.
"""

from __future__ import annotations

import shutil
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate.domain.job import GateOutcome, JobRequest, ProgressEvent, RunOptions
from gate.domain.manifest import Gates, KernelSpec, Manifest
from gate.domain.results import (
    BenchResult,
    BuildResult,
    CorrectnessResult,
    Fingerprint,
    JobResult,
    ProfileResult,
    SideResults,
    StageStatus,
    StaticResult,
)
from gate.errors import GateError, ManifestError
from gate.pipeline import static
from gate.pipeline.decide import decide
from gate.pipeline.manifest import load_manifest
from gate.pipeline.source import Mirror

NO_DEVICE = "not run: no CUDA device"
Emit = Callable[[ProgressEvent], None]


def cuda_available() -> bool:
    """True when torch is importable and sees a CUDA device (absent torch means no GPU)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _stage(emit: Emit, stage: str, side: str, result_type: type, run: Callable[[], Any]) -> Any:
    """Run one stage between its progress events; a GateError becomes the stage's ERROR status."""
    emit(ProgressEvent(stage=stage, side=side, state="started"))
    try:
        res = run()
    except GateError as exc:
        res = result_type(status=StageStatus.ERROR, reason=f"{type(exc).__name__}: {exc}")
    emit(ProgressEvent(stage=stage, side=side, state=res.status.value, detail=res.reason))
    return res


def _not_run(emit: Emit, stage: str, side: str, result_type: type, reason: str) -> Any:
    emit(ProgressEvent(stage=stage, side=side, state=StageStatus.NOT_RUN.value, detail=reason))
    return result_type(status=StageStatus.NOT_RUN, reason=reason)


def measure(request: JobRequest, emit: Emit,
            checkpoint: Callable[[JobResult], None] | None = None) -> JobResult:
    """Every stage of one job, in order. `checkpoint` receives the partial result after each stage."""
    save = checkpoint or (lambda _result: None)
    kernel, options = request.kernel, request.options
    artifacts = Path(request.artifacts_dir)
    result = JobResult(kernel=kernel.name, candidate=SideResults(sha=request.candidate.sha),
                       baseline=SideResults(sha=request.baseline.sha) if request.baseline else None)
    result.candidate.static = _stage(emit, "static", "candidate", StaticResult, lambda: static.run_static(
        kernel, Path(request.candidate.path), artifacts / "candidate" / "static", nvcc=options.nvcc_path))
    save(result)
    if result.candidate.static.status is StageStatus.FAILED:
        skip = "not run: static compile failed"
    elif not options.gpu_stages:
        skip = "not run: GPU stages disabled"
    elif not cuda_available():
        skip = NO_DEVICE
    else:
        _measure_on_gpu(request, result, emit, save)
        return result
    result.candidate.build = _not_run(emit, "build", "candidate", BuildResult, skip)
    result.candidate.correctness = _not_run(emit, "correctness", "candidate", CorrectnessResult, skip)
    result.bench = _not_run(emit, "bench", "joint", BenchResult, skip)
    result.candidate.profile = _not_run(emit, "profile", "candidate", ProfileResult, skip)
    result.fingerprint = Fingerprint(host=socket.gethostname())
    save(result)
    return result


def _measure_on_gpu(request: JobRequest, result: JobResult, emit: Emit,
                    save: Callable[[JobResult], None]) -> None:
    from gate.pipeline import bench, build, correctness, fingerprint, profile, workloads

    kernel, options = request.kernel, request.options
    artifacts = Path(request.artifacts_dir)
    cache = Path(options.build_cache_dir) if options.build_cache_dir else artifacts / "build-cache"
    modules: dict[str, Any] = {}

    def build_side(side: str, src: Path) -> BuildResult:
        res = build.build_extension(kernel, src, cache, artifacts / side / "build")
        if res.status is StageStatus.PASSED:
            try:
                modules[side] = build.load_module(res.module_path)
            except (ImportError, OSError) as exc:   # e.g. an undefined symbol in the kernel's code
                res.status, res.reason = StageStatus.FAILED, f"the built module does not import: {exc}"
        return res

    cand_src = Path(request.candidate.path)
    result.candidate.build = _stage(emit, "build", "candidate", BuildResult,
                                    lambda: build_side("candidate", cand_src))
    if request.baseline and result.baseline:
        result.baseline.build = _stage(emit, "build", "baseline", BuildResult,
                                       lambda: build_side("baseline", Path(request.baseline.path)))
    save(result)
    if "candidate" not in modules:
        _skip_rest(result, emit, "not run: build failed")
    else:
        def check() -> CorrectnessResult:
            try:
                workload = workloads.get_workload(kernel, cand_src)
            except GateError:
                raise
            except Exception as exc:   # the repository's own workload code failed
                return CorrectnessResult(StageStatus.FAILED, reason=f"workload {kernel.workload}: {exc}")
            modules["workload"] = workload
            return correctness.check(kernel, modules["candidate"], workload, options.correctness_seeds)

        result.candidate.correctness = _stage(emit, "correctness", "candidate", CorrectnessResult, check)
        save(result)
        if result.candidate.correctness.status is not StageStatus.PASSED:
            _skip_rest(result, emit, f"not run: correctness {result.candidate.correctness.status.value}")
        else:
            result.bench = _stage(emit, "bench", "joint", BenchResult, lambda: bench.time_revisions(
                kernel, modules["workload"], modules["candidate"], modules.get("baseline"), options))
            save(result)
            _profile_sides(request, result, emit, save, profile.profile)
    result.fingerprint = fingerprint.collect(options.ncu_path)
    save(result)


def _skip_rest(result: JobResult, emit: Emit, reason: str) -> None:
    if result.candidate.correctness is None:
        result.candidate.correctness = _not_run(emit, "correctness", "candidate", CorrectnessResult, reason)
    result.bench = _not_run(emit, "bench", "joint", BenchResult, reason)
    result.candidate.profile = _not_run(emit, "profile", "candidate", ProfileResult, reason)


def needs_baseline_profile(gates: Gates) -> bool:
    """Only the relative ncu rules read the baseline's profile. Profiling it otherwise would cost a
    second ncu session (about 6 s on an H200, half of a warm verdict) for figures no rule uses."""
    return gates.max_tensor_pipe_drop_pct is not None or gates.max_bank_conflict_increase_pct is not None


def _profile_sides(request: JobRequest, result: JobResult, emit: Emit, save: Callable[[JobResult], None],
                   run_profile: Callable[..., ProfileResult]) -> None:
    kernel, options = request.kernel, request.options
    artifacts = Path(request.artifacts_dir)
    if not (options.profile and kernel.profile):
        result.candidate.profile = _not_run(emit, "profile", "candidate", ProfileResult,
                                            "not run: profiling disabled")
        return
    sides = [("candidate", request.candidate, result.candidate)]
    if request.baseline and result.baseline and result.baseline.build \
            and result.baseline.build.status is StageStatus.PASSED and needs_baseline_profile(kernel.gates):
        sides.append(("baseline", request.baseline, result.baseline))
    for side, checkout, target in sides:
        module_path = target.build.module_path
        target.profile = _stage(emit, "profile", side, ProfileResult, lambda: run_profile(
            kernel, module_path, Path(checkout.path), artifacts / side / "profile", options))
        save(result)


# ---- parent side -------------------------------------------------------------------------------

ARTIFACT_KINDS = {"ptxas.log": "ptxas_log", "build.log": "build_log", "result.json": "result_json",
                  "request.json": "request_json"}


def manifest_at(mirror: Mirror, repo: str, sha: str, scratch: Path) -> Manifest:
    """The manifest of `repo` at `sha` (read from a throw-away checkout)."""
    workspace = scratch / f"manifest-{uuid.uuid4().hex[:8]}"
    try:
        mirror.checkout(repo, sha, workspace)
        return load_manifest(workspace)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def collect_artifacts(artifacts_dir: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted(artifacts_dir.rglob("*")):
        kind = "ncu_report" if path.suffix == ".ncu-rep" else ARTIFACT_KINDS.get(path.name)
        if kind and path.is_file():
            found.append((kind, str(path)))
    return found


def gate_job(*, repo: str, sha: str, base_sha: str | None, kernel: str, data_dir: Path,
             options: RunOptions, mirror: Mirror, on_event: Emit | None = None,
             job_key: str | None = None) -> GateOutcome:
    """Gate one kernel at `sha` (a full sha) against `base_sha` on this machine."""
    from gate.runner.spawn import run_child

    emit = on_event or (lambda _event: None)
    key = job_key or f"{sha[:12]}-{kernel}-{uuid.uuid4().hex[:8]}"
    workspace = Path(data_dir) / "workspaces" / key
    artifacts = Path(data_dir) / "artifacts" / key
    try:
        emit(ProgressEvent(stage="source", side="joint", state="started"))
        candidate = mirror.checkout(repo, sha, workspace / "candidate")
        spec = _kernel_spec(load_manifest(Path(candidate.path)), kernel)
        baseline = mirror.checkout(repo, base_sha, workspace / "baseline") if base_sha else None
        # A root commit, or a baseline whose manifest lacks the kernel: nothing to regress against.
        new_kernel = baseline is None or not declares(Path(baseline.path), kernel)
        if new_kernel:
            baseline = None
        emit(ProgressEvent(stage="source", side="joint", state="passed", detail=f"{sha[:12]}" + (
            f" vs {base_sha[:12]}" if baseline else ", new kernel: no baseline declares it")))
        request = JobRequest(kernel=spec, candidate=candidate, baseline=baseline,
                             artifacts_dir=str(artifacts), options=options)
        result = run_child(request, timeout_s=spec.timeout_s, on_event=emit)
        result.new_kernel = new_kernel
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    report = decide(result, spec.gates)
    return GateOutcome(result=result, report=report, artifacts=collect_artifacts(artifacts))


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
