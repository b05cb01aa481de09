"""The one module that knows the order of the stages, run inside the GPU child (`gate.runner`).

`measure`: static (both sides side by side) -> with a GPU: build -> correctness -> bench -> profile ->
fingerprint (`_GpuStages`), while `ahead.Ahead` gives the GPU stages a head start. Both builds are
imported into this process unless either side registers torch ops or asks for `own_process` (issue
26): then the baseline is loaded and timed in a side host, closed after the bench, and such a kernel
is timed with the isolated pacing alone too. Without a suitable GPU the GPU stages are NOT_RUN with
the reason; their modules are imported in the GPU branch only, so a CPU machine never imports torch.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gate.compiling import static
from gate.compiling import toolchain as tc
from gate.compiling.compile_pool import CompilePool, compile_workers
from gate.domain.job import LOADING_MODULE, Checkout, JobRequest, ProgressEvent, RunOptions
from gate.domain.names import Side, Stage
from gate.domain.results import (BenchResult, BuildResult, CorrectnessResult, Fingerprint, JobResult, ProfileResult,
                                 SideResults, StageStatus, StaticResult)
from gate.errors import GateError
from gate.pipeline.ahead import Ahead
from gate.profiling.profile import Turns

NO_DEVICE = "not run: no CUDA device"
Emit = Callable[[ProgressEvent], None]


def cuda_available() -> bool:
    """True when torch is importable and sees a CUDA device (absent torch means no GPU)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def not_for_this_gpu(name: str, archs: list[str]) -> str:
    """Why a kernel cannot run on the local GPU ('' when it can): only other GPUs' arch-specific targets
    (`sm_90a` on an A100). Its GPU stages are then NOT_RUN: the GPU is wrong, not the kernel."""
    device = tc.device_arch()
    if tc.archs_for_device(archs, device):
        return ""
    return f"not run: {name} targets {', '.join(archs)} only; this GPU is {device}"


def _stage(emit: Emit, stage: Stage, side: Side, result_type: type, run: Callable[[], Any]) -> Any:
    """Run one stage between its progress events; a GateError becomes the stage's ERROR status."""
    emit(ProgressEvent(stage=stage, side=side, state="started"))
    try:
        res = run()
    except GateError as exc:
        res = result_type(status=StageStatus.ERROR, reason=f"{type(exc).__name__}: {exc}")
    emit(ProgressEvent(stage=stage, side=side, state=res.status.value, detail=res.reason))
    return res


def _one_at_a_time(emit: Emit, lock: threading.Lock) -> Emit:
    """`emit` for stages of both sides running in threads: one event at a time, under `lock`."""
    def say(event: ProgressEvent) -> None:
        with lock:
            emit(event)
    return say


def _not_run(emit: Emit, stage: Stage, side: Side, result_type: type, reason: str) -> Any:
    emit(ProgressEvent(stage=stage, side=side, state=StageStatus.NOT_RUN.value, detail=reason))
    return result_type(status=StageStatus.NOT_RUN, reason=reason)


def warm_up(options: RunOptions, artifacts: Path) -> None:
    """What a spare child (`python -m gate.runner --spare`) does before its job, where there is a GPU:
    import the GPU stages, make its CUDA context, start both sides' profile sessions in `artifacts`."""
    if not cuda_available():
        return
    from gate.checking import correctness  # noqa: F401  (their imports: torch's own)
    from gate.compiling import build  # noqa: F401
    from gate.pipeline.ahead import start_early
    from gate.profiling import profile  # noqa: F401
    from gate.timing import bench  # noqa: F401

    _cuda_context()
    start_early(options, artifacts)


def _cuda_context() -> None:
    """Make this process's CUDA context (torch's first allocation on the device)."""
    import torch

    torch.empty(1, device="cuda")


def object_cache_dir(request: JobRequest) -> Path:
    """One object cache for the static and build stages: the static stage's objects are the build's."""
    options = request.options
    return Path(options.build_cache_dir) if options.build_cache_dir else Path(request.artifacts_dir) / "build-cache"


def measure(request: JobRequest, emit: Emit,
            checkpoint: Callable[[JobResult], None] | None = None) -> JobResult:
    """Every stage of one job, in order. `checkpoint` receives the partial result after each stage."""
    save = checkpoint or (lambda _result: None)
    kernel, options = request.kernel, request.options
    result = JobResult(kernel=kernel.name, candidate=SideResults(sha=request.candidate.sha),
                       baseline=SideResults(sha=request.baseline.sha) if request.baseline else None)

    def gpu_ready() -> bool:
        """Whether the GPU stages can run here; if so, the CUDA context is made now, beside the static stages."""
        if not (cuda_available() and not not_for_this_gpu(kernel.name, kernel.arch)):
            return False
        _cuda_context()
        return True

    workers = request.options.compile_workers or compile_workers()
    with CompilePool(workers) as pool, Ahead(request, pool, object_cache_dir(request), gpu_ready) as ahead:
        _static_sides(request, result, emit, pool)
        save(result)
        if result.candidate.static.status is StageStatus.FAILED:
            skip = "not run: static compile failed"
        elif not options.gpu_stages:
            skip = "not run: GPU stages disabled"
        elif not cuda_available():
            skip = NO_DEVICE
        elif why := not_for_this_gpu(kernel.name, kernel.arch):
            skip = why
        else:
            _measure_on_gpu(request, result, emit, save, pool, ahead)
            return result
    result.candidate.build = _not_run(emit, Stage.BUILD, Side.CANDIDATE, BuildResult, skip)
    _skip_rest(result, emit, skip)
    result.fingerprint = Fingerprint(host=socket.gethostname())
    save(result)
    return result


def _static_sides(request: JobRequest, result: JobResult, emit: Emit, pool: CompilePool) -> None:
    """Both sides' static stages (the baseline's for the static delta), side by side in the compile pool."""
    options = request.options
    artifacts = Path(request.artifacts_dir)
    say = _one_at_a_time(emit, threading.Lock())

    def one_side(side: Side, checkout: Checkout) -> StaticResult:
        def compiled(detail: str) -> None:
            say(ProgressEvent(stage=Stage.STATIC, side=side, state="running", detail=detail))
        return _stage(say, Stage.STATIC, side, StaticResult, lambda: static.run_static(
            request.spec(side), Path(checkout.path), artifacts / side / Stage.STATIC, nvcc=options.nvcc_path,
            cache_dir=object_cache_dir(request), on_compiled=compiled, pool=pool,
            facts=options.pch_path))

    sides = [(Side.CANDIDATE, request.candidate, result.candidate)]
    if request.baseline and result.baseline:
        sides.append((Side.BASELINE, request.baseline, result.baseline))
    with ThreadPoolExecutor(max_workers=len(sides), thread_name_prefix="static-side") as per_side:
        futures = [(target, per_side.submit(one_side, side, checkout)) for side, checkout, target in sides]
        for target, future in futures:
            target.static = future.result()


def _measure_on_gpu(request: JobRequest, result: JobResult, emit: Emit,
                    save: Callable[[JobResult], None], pool: CompilePool, ahead: Ahead) -> None:
    from gate.nvidia import fingerprint
    from gate.timing import pinned

    # The timer's references, before the first built module (and its initialiser) is imported.
    pinned.pin()
    stages = _GpuStages(request, result, emit, save, pool, ahead)
    try:
        stages.run()
    finally:
        stages.close_hosts()
    if result.fingerprint is None:
        result.fingerprint = fingerprint.collect(request.options.ncu_path)
    save(result)


class _GpuStages:
    """The GPU stages of one job, in order; a stage that does not pass ends the line (`_skip_rest`)."""

    def __init__(self, request: JobRequest, result: JobResult, emit: Emit, save: Callable[[JobResult], None],
                 pool: CompilePool, ahead: Ahead):
        from gate.compiling import build
        from gate.timing import bench
        from gate.timing.remote_side import SideHostClient

        self.request, self.result, self.emit, self.save = request, result, emit, save
        self.pool, self.ahead = pool, ahead
        self.time_revisions = bench.time_revisions     # taken before any build is imported, as the pins are
        self.modules: dict[str, Any] = {}               # by side, and the job's "workload"
        self.hosts: dict[str, SideHostClient] = {}      # a side timed in its own process (`side_host`)
        sides = [(side, checkout) for side, checkout in ((Side.CANDIDATE, request.candidate),
                                                          (Side.BASELINE, request.baseline)) if checkout]
        # Seen in the sources or their headers now; in a built module once it is built (`_build`).
        self.registers_ops = any(request.spec(side).own_process or build.registers_torch_ops(
            request.spec(side), Path(checkout.path)) for side, checkout in sides)

    def run(self) -> None:
        request, result, emit = self.request, self.result, self.emit
        result.candidate.build = _stage(emit, Stage.BUILD, Side.CANDIDATE, BuildResult,
                                        lambda: self._build(Side.CANDIDATE, Path(request.candidate.path)))
        self.save(result)   # before the baseline loads: a crash there must not take the candidate's result along
        if request.baseline and result.baseline:
            result.baseline.build = _stage(emit, Stage.BUILD, Side.BASELINE, BuildResult,
                                           lambda: self._build(Side.BASELINE, Path(request.baseline.path)))
            self.save(result)
        if Side.CANDIDATE not in self.modules:
            _skip_rest(result, emit, "not run: build failed")
            return
        result.candidate.correctness = _stage(emit, Stage.CORRECTNESS, Side.CANDIDATE, CorrectnessResult, self._check)
        self.save(result)
        if result.candidate.correctness.status is not StageStatus.PASSED:
            _skip_rest(result, emit, f"not run: correctness {result.candidate.correctness.status.value}")
            return
        self.ahead.wait_ready()      # no CUDA context is being made beside the timed work
        result.bench = _stage(emit, Stage.BENCH, Side.JOINT, BenchResult, self._timed)
        self.save(result)
        self.close_hosts()           # its memory freed before the profile (each side in an ncu process of its own)
        self._profile_and_fingerprint()

    def _build(self, side: Side, src: Path) -> BuildResult:
        from gate.compiling import build

        request, options = self.request, self.request.options
        out = Path(request.artifacts_dir) / side / Stage.BUILD
        res = build.build_extension(request.spec(side), src, object_cache_dir(request), out, nvcc=options.nvcc_path,
                                    pool=self.pool, pch_dir=options.pch_path)
        if res.status is not StageStatus.PASSED:
            return res
        self.registers_ops = self.registers_ops or build.module_registers_ops(res.module_path)
        # Said before the import: a static initialiser that aborts the process (a second
        # TORCH_LIBRARY of one namespace is SIGABRT) leaves this as the stage's last word.
        self.emit(ProgressEvent(stage=Stage.BUILD, side=side, state="running", detail=LOADING_MODULE))
        if self.registers_ops and side is Side.BASELINE:
            return self._host(side, res, out / "side-host.log")
        try:
            self.modules[side] = build.load_module(res.module_path)
        except (ImportError, OSError) as exc:   # e.g. an undefined symbol in the kernel's code
            res.status, res.reason = StageStatus.FAILED, f"the built module does not import: {exc}"
        return res

    def _host(self, side: Side, res: BuildResult, log: Path) -> BuildResult:
        """`side`'s build loaded in a side host (driven by the candidate's workload); a failed load fails it."""
        from gate.timing import pinned
        from gate.timing.remote_side import SideHostClient, SideHostError

        try:
            self.hosts[side] = SideHostClient.start(self.request.spec(side), res.module_path,
                                                    Path(self.request.candidate.path), log, quiesce=pinned.synchronize)
        except SideHostError as exc:
            res.status = StageStatus.FAILED
            res.reason = f"the built module does not load in its own process: {exc}"
        return res

    def _check(self) -> CorrectnessResult:
        from gate.checking import correctness, workloads

        kernel = self.request.kernel
        try:
            workload = workloads.get_workload(kernel, Path(self.request.candidate.path))
        except GateError:
            raise
        except Exception as exc:   # the repository's own workload code failed
            return CorrectnessResult(StageStatus.FAILED, reason=f"workload {kernel.workload}: {exc}")
        self.modules["workload"] = workload
        return correctness.check(kernel, self.modules[Side.CANDIDATE], workload, self.request.options.correctness_seeds)

    def _timed(self) -> BenchResult:
        from gate.nvidia import clock_lock, gpu_watch

        request, options, modules = self.request, self.request.options, self.modules
        # the side host and the profile sessions waiting for their go are the job's own
        own = [host.pid for host in self.hosts.values()] + self.ahead.pids()
        with clock_lock.apply(options.clock_policy) as clocks, gpu_watch.watch_gpu(own_pids=own) as watch:
            res = self.time_revisions(request.kernel, modules["workload"], modules[Side.CANDIDATE],
                                      modules.get(Side.BASELINE), options, kept_methods=request.kept_methods,
                                      baseline_remote=self.hosts.get(Side.BASELINE), synchronous=self.registers_ops,
                                      baseline_function=request.spec(Side.BASELINE).function,
                                      on_step=lambda step: self.emit(ProgressEvent(
                                          stage=Stage.BENCH, side=Side.JOINT, state="running", detail=step)))
        res.gpu_watch = watch.result
        res.clock_policy, res.clock_note = clocks.policy, clocks.note
        return res

    def _profile_and_fingerprint(self) -> None:
        from gate.nvidia import fingerprint
        from gate.profiling import profile

        # The clocks right after the timed work, read beside the profile's start.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fingerprint") as probe:
            fingerprinted = probe.submit(fingerprint.collect, self.request.options.ncu_path)
            _profile_sides(self.request, self.result, self.emit, self.save, profile.profile, self.ahead)
            self.result.fingerprint = fingerprinted.result()

    def close_hosts(self) -> None:
        for host in self.hosts.values():
            host.close()


def _skip_rest(result: JobResult, emit: Emit, reason: str) -> None:
    if result.candidate.correctness is None:
        result.candidate.correctness = _not_run(emit, Stage.CORRECTNESS, Side.CANDIDATE, CorrectnessResult, reason)
    result.bench = _not_run(emit, Stage.BENCH, Side.JOINT, BenchResult, reason)
    result.candidate.profile = _not_run(emit, Stage.PROFILE, Side.CANDIDATE, ProfileResult, reason)


def _profile_sides(request: JobRequest, result: JobResult, emit: Emit, save: Callable[[JobResult], None],
                   run_profile: Callable[..., ProfileResult], ahead: Ahead) -> None:
    options = request.options
    artifacts = Path(request.artifacts_dir)
    if not (options.profile and request.kernel.profile):
        result.candidate.profile = _not_run(emit, Stage.PROFILE, Side.CANDIDATE, ProfileResult,
                                            "not run: profiling disabled")
        return
    sides = [(Side.CANDIDATE, request.candidate, result.candidate)]
    # The baseline is profiled whenever it built, whatever the gates: beside the relative ncu rules,
    # the source-line diff (gate.verdict.lines) compares the candidate's per-line counters with its
    # own. That costs a second ncu session (about 6 s on an H200).
    if request.baseline and result.baseline and result.baseline.build \
            and result.baseline.build.status is StageStatus.PASSED and request.profile_baseline:
        sides.append((Side.BASELINE, request.baseline, result.baseline))
    # One side under ncu at a time, in this order; each side's report is read beside the next one's run.
    turns, lock = Turns(), threading.Lock()
    say = _one_at_a_time(emit, lock)

    def one_side(number: int, side: Side, checkout: Checkout, target: SideResults) -> None:
        turn = turns.turn(number)
        try:
            target.profile = _stage(say, Stage.PROFILE, side, ProfileResult, lambda: run_profile(
                request.spec(side), target.build.module_path, Path(checkout.path), artifacts / side / Stage.PROFILE,
                options, session=ahead.session(side), turn=turn, workload_dir=Path(request.candidate.path)))
        finally:
            turn.release()          # a profile that never took its turn hands it on
        with lock:
            save(result)

    with ThreadPoolExecutor(max_workers=len(sides), thread_name_prefix="profile-side") as per_side:
        for future in [per_side.submit(one_side, i, *side) for i, side in enumerate(sides)]:
            future.result()
