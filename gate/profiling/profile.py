"""Profile stage: the candidate under Nsight Compute, gate metrics only, one launch per shape.

`profile(...)` runs `ncu` on `gate.profiling.profile_target`, requesting only the catalog's metrics for
the local arch; the `.ncu-rep` stays in `out_dir` and is read in a clean interpreter (`ncu_isolated`).
Whose fault is what: `check_ncu_run` (a timeout is the gate's: hangs are judged by the correctness
stage, without a profiler's replay overhead). A metric that comes back n/a is listed and stays None,
so no rule can pass on it.
"""

from __future__ import annotations

import re
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from gate.compiling.toolchain import device_arch
from gate.domain import KernelMetrics, KernelSpec, ProfileResult, StageStatus
from gate.domain.job import RunOptions
from gate.domain.source_lines import KernelSourceProfile
from gate.errors import ProfilerError, ToolMissingError
from gate.nvidia import ncu_cli
from gate.nvidia.ncu_report import kernel_metrics
from gate.nvidia.source_counters import SECTION as SOURCE_SECTION
from gate.nvidia.source_counters import source_profile
from gate.profiling.profile_session import ProfileSession, TargetStatus, read_status

DEFAULT_WORKLOAD_FACTORY = "gate.checking.workloads:get_workload"
# PyTorch's own kernels (fills, copies, casts) that a binding may launch around the real work.
TORCH_HELPER_KERNEL = re.compile(r"^(?:void\s+)?(?:at|c10)::")
_INFRA_MARKERS = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded")


def check_ncu_run(output: str, returncode: int, target: TargetStatus | None) -> str | None:
    """None if the report can be read; a kernel-fault reason (FAILED); ProfilerError if infra."""
    lines = output.splitlines()
    for marker in _INFRA_MARKERS:
        hit = next((ln.strip() for ln in lines if marker in ln), None)
        if hit is not None:
            raise ProfilerError(f"ncu could not read GPU performance counters: {hit}")
    errors = [ln.strip() for ln in lines if "==ERROR==" in ln]
    if target is not None and target.status == "kernel_fault":
        return f"the kernel failed under ncu: {target.detail.strip()}"
    if target is not None and target.status == "running" and returncode != 0:
        evidence = " | ".join(errors) or f"ncu rc {returncode}"
        return f"the profile target died in the kernel's calls ({target.detail}): {evidence}"
    if errors:
        raise ProfilerError("ncu failed: " + " | ".join(errors))
    if target is None:
        raise ProfilerError(f"the profile target left no status (ncu rc {returncode}): "
                            + " | ".join(lines[-5:]))
    if target.status == "setup_error":
        raise ProfilerError(f"the profile target could not start: {target.detail.strip()}")
    if returncode != 0 or target.status != "ok":
        raise ProfilerError(f"ncu exited with {returncode}, target status {target.status!r}")
    if any("No kernels were profiled" in ln for ln in lines):
        if target.regions:
            shapes = ", ".join(f"{s}/{d}" for s, d in target.regions)
            return f"the kernel's function launched no CUDA kernel in its profiled calls ({shapes})"
        raise ProfilerError("ncu profiled nothing: the target made no profiled call")
    return None


def attribute_by_order(kernels: list[KernelMetrics], regions: list[list[str]]) -> None:
    """Without NVTX ranges: split the launches evenly over the regions, in order (in place)."""
    if not regions or any(k.shape for k in kernels) or len(kernels) % len(regions):
        return
    per_region = len(kernels) // len(regions)
    for i, k in enumerate(kernels):
        k.shape, k.dtype = regions[i // per_region]


def start_session(out_dir: Path, options: RunOptions, *, arch: str | None = None,
                  workload_factory: str = DEFAULT_WORKLOAD_FACTORY) -> ProfileSession:
    """The ncu session of one side's profile, started now and waiting for `profile(session=)`."""
    ncu = ncu_cli.find(options.ncu_path)
    if ncu is None:
        raise ToolMissingError(f"Nsight Compute not found: {options.ncu_path!r} is not on PATH")
    return ProfileSession.start(out_dir, ncu=ncu, arch=arch or device_arch(),
                                clock_control=options.ncu_clock_control, workload_factory=workload_factory)


class Turns:
    """The sides' turns on the GPU in the order of their numbers, so that one side's report is read while
    the next runs under ncu. A turn is handed on when left, or on `release` (a profile that never took it)."""

    def __init__(self) -> None:
        self._next = 0
        self._cond = threading.Condition()

    def turn(self, number: int) -> Turn:
        return Turn(self, number)

    def _wait(self, number: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._next >= number)

    def _hand_on(self, number: int) -> None:
        with self._cond:
            self._next = max(self._next, number + 1)
            self._cond.notify_all()


@dataclass
class Turn:
    turns: Turns
    number: int

    def __enter__(self) -> Turn:
        self.turns._wait(self.number)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        self.turns._hand_on(self.number)


def profile(kernel: KernelSpec, module_path: str, src_dir: Path, out_dir: Path,
            options: RunOptions, *, arch: str | None = None,
            workload_factory: str = DEFAULT_WORKLOAD_FACTORY, session: ProfileSession | None = None,
            turn: AbstractContextManager = nullcontext(), workload_dir: Path | None = None) -> ProfileResult:
    """Profile `kernel` (built at `module_path` from `src_dir`) in `session` when one was started ahead,
    with the workload of `workload_dir` (default `src_dir`). `turn` is held while the GPU is in use,
    not while the report is read."""
    try:
        with turn:
            start = time.monotonic()        # the stage's own time: not the wait for the other side's run
            if session is None:
                session = start_session(out_dir, options, arch=arch, workload_factory=workload_factory)
            returncode, output = session.run(module_path, kernel, workload_dir or src_dir, options.stage_timeout_s)
        return _profiled(session, src_dir, returncode, output, start)
    finally:
        if session is not None:
            session.cancel()


def _profiled(session: ProfileSession, src_dir: Path, returncode: int, output: str, start: float) -> ProfileResult:
    """The stage's result from ncu's run and its report."""
    status = read_status(session.status_path)
    version = ncu_cli.version(session.ncu)
    report_path = session.report_path

    def result(status_: StageStatus, reason: str, kernels: list[KernelMetrics],
               source: list[KernelSourceProfile] | None = None) -> ProfileResult:
        return ProfileResult(status=status_, reason=reason, duration_s=time.monotonic() - start,
                             kernels=kernels, report_path=str(report_path) if report_path.is_file()
                             else "", ncu_version=version, log=output[-20000:], source=source or [])

    fault = check_ncu_run(output, returncode, status)
    if fault is not None:
        return result(StageStatus.FAILED, fault, [])
    launches = session.reader.read(report_path)   # never in this torch-loaded process
    own = [launch for launch in launches if not TORCH_HELPER_KERNEL.match(launch.demangled)]
    kernels = [kernel_metrics(launch) for launch in own]
    attribute_by_order(kernels, status.regions if status else [])
    notes = [f"{len(launches) - len(own)} PyTorch helper launch(es) left out"] if len(own) < len(launches) else []
    if not kernels:
        return result(StageStatus.FAILED, "only PyTorch helper kernels ran in the profiled calls", [])
    missing = sorted({m for k in kernels for m in k.missing_metrics})
    if missing:
        notes.append("n/a on this GPU/ncu (no rule can pass on them): " + ", ".join(missing))
    passes = max((k.replay_passes or 0) for k in kernels)
    summary = (f"{len(kernels)} launch(es) profiled on {session.arch}, up to {passes} replay passes each; "
               + session.phases(status.times if status else {}))
    # The source text of the kept lines comes from the checkout here, in the child: the parent
    # never reads a path the report names.
    source = [source_profile(k.kernel, k.shape, k.dtype, launch.instructions, src_dir)
              for launch, k in zip(own, kernels) if launch.instructions]
    if not source:
        notes.append(f"no {SOURCE_SECTION} in the report: no per-line attribution")
    return result(StageStatus.PASSED, "; ".join([summary, *notes]), kernels, source)
