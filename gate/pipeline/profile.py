"""Profile stage: the candidate under Nsight Compute, gate metrics only, one launch per shape.

`profile(...)` runs `ncu` in its own process group on `gate.runner.profile_target`, which calls
the kernel once per (shape, dtype) after warm-up between cudaProfilerStart/Stop (so ncu runs with
`--profile-from-start off`) inside an NVTX range naming the shape. Only the catalog's metrics for
the local arch are requested; the `.ncu-rep` stays in `out_dir` as an artifact and is read with
`gate.nvidia.ncu_report` in a separate clean interpreter (`ncu_isolated`: see why there).

Faults, and whose they are:
- ncu not found -> ToolMissingError. Counters not permitted (ERR_NVGPUCTRPERM), no profiler
  library (LibraryNotLoaded, e.g. under gVisor), any other `==ERROR==` line, a target that could
  not start, a timeout -> ProfilerError (infrastructure: the verdict becomes `error`).
  A timeout counts as infrastructure because hangs are judged by the correctness stage, which runs
  the same calls without a profiler's replay overhead.
- The kernel's call raised under ncu -> FAILED with the traceback.
- "No kernels were profiled": when the target got through its profiled calls, the extension's
  function launched no CUDA kernel in them (work done elsewhere, or not at all) -> FAILED. When
  it never reached a profiled call -> ProfilerError.
- A requested metric that comes back n/a is listed per launch (`missing_metrics`) and in the
  stage's reason; its value stays None, so no rule can pass on it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gate.domain import KernelMetrics, KernelSpec, ProfileResult, StageStatus
from gate.domain.codec import to_json
from gate.domain.job import RunOptions
from gate.domain.source_lines import KernelSourceProfile
from gate.errors import ProfilerError, ToolMissingError
from gate.nvidia.ncu_catalog import arch_of, requested_metrics
from gate.pipeline.ncu_isolated import read_launches_isolated
from gate.pipeline.toolchain import gate_python_env
from gate.nvidia.ncu_report import kernel_metrics
from gate.nvidia.source_counters import SECTION as SOURCE_SECTION
from gate.nvidia.source_counters import source_profile

DEFAULT_WORKLOAD_FACTORY = "gate.pipeline.workloads:get_workload"
# PyTorch's own kernels (fills, copies, casts) that a binding may launch around the real work.
TORCH_HELPER_KERNEL = re.compile(r"^(?:void\s+)?(?:at|c10)::")
_INFRA_MARKERS = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded")


@dataclass
class TargetStatus:
    status: str                    # ok | running | kernel_fault | setup_error
    detail: str = ""
    regions: list[list[str]] = field(default_factory=list)   # [shape label, dtype] entered


def build_ncu_command(ncu: str, arch: str, clock_control: str, report_base: Path,
                      target: list[str]) -> list[str]:
    """The ncu argument list (no shell) that profiles `target` with `arch`'s gate metrics."""
    return [
        ncu, "--target-processes", "all",
        "--profile-from-start", "off",       # only launches between cudaProfilerStart/Stop
        "--nvtx",                            # record the NVTX range (the shape) of each launch
        "--replay-mode", "kernel",
        "--cache-control", "all",            # caches flushed before every replay pass
        "--clock-control", clock_control,    # identical for both sides of a comparison
        "--metrics", ",".join(requested_metrics(arch)),
        "--section", SOURCE_SECTION,         # per-instruction counters: where in the source it got slower
        "-f", "-o", str(report_base),
        *target,
    ]


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


def ncu_version(ncu: str) -> str:
    """"Version 2025.3.1.0 (build ...)" -> "2025.3.1.0"; "" when ncu does not say."""
    out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    match = re.search(r"Version (\S+)", out)
    return match.group(1) if match else ""


def local_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return arch_of(major, minor)


def _run_in_own_group(cmd: list[str], env: dict[str, str], timeout_s: float) -> tuple[int, str]:
    """Run ncu (and the target under it) in a new process group; kill the whole group on timeout."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise ProfilerError(f"ncu did not finish within {timeout_s:.0f} s") from None
    return proc.returncode, output


def profile(kernel: KernelSpec, module_path: str, src_dir: Path, out_dir: Path,
            options: RunOptions, *, arch: str | None = None,
            workload_factory: str = DEFAULT_WORKLOAD_FACTORY) -> ProfileResult:
    """Profile `kernel` (built at `module_path`) on the local GPU. See the module docstring."""
    start = time.monotonic()
    ncu = shutil.which(options.ncu_path)
    if ncu is None:
        raise ToolMissingError(f"Nsight Compute not found: {options.ncu_path!r} is not on PATH")
    arch = arch or local_arch()
    out_dir.mkdir(parents=True, exist_ok=True)
    status_path = out_dir / "profile_target_status.json"
    status_path.unlink(missing_ok=True)
    spec_path = out_dir / "profile_target.json"
    spec_path.write_text(json.dumps({
        "kernel": to_json(kernel), "module_path": str(module_path), "src_dir": str(src_dir),
        "status_path": str(status_path), "warmup": 3, "workload_factory": workload_factory,
    }))
    report_base = out_dir / "profile"
    target = [sys.executable, "-m", "gate.runner.profile_target", str(spec_path)]
    cmd = build_ncu_command(ncu, arch, options.ncu_clock_control, report_base, target)
    returncode, output = _run_in_own_group(cmd, gate_python_env(), options.stage_timeout_s)
    (out_dir / "ncu.log").write_text(output)
    status = TargetStatus(**json.loads(status_path.read_text())) if status_path.is_file() else None
    version = ncu_version(ncu)
    report_path = report_base.with_suffix(".ncu-rep")

    def result(status_: StageStatus, reason: str, kernels: list[KernelMetrics],
               source: list[KernelSourceProfile] | None = None) -> ProfileResult:
        return ProfileResult(status=status_, reason=reason, duration_s=time.monotonic() - start,
                             kernels=kernels, report_path=str(report_path) if report_path.is_file()
                             else "", ncu_version=version, log=output[-20000:], source=source or [])

    fault = check_ncu_run(output, returncode, status)
    if fault is not None:
        return result(StageStatus.FAILED, fault, [])
    launches = read_launches_isolated(report_path, ncu)   # never in this torch-loaded process
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
    summary = f"{len(kernels)} launch(es) profiled on {arch}, up to {passes} replay passes each"
    # The source text of the kept lines comes from the checkout here, in the child: the parent
    # never reads a path the report names.
    source = [source_profile(k.kernel, k.shape, k.dtype, launch.instructions, src_dir)
              for launch, k in zip(own, kernels) if launch.instructions]
    if not source:
        notes.append(f"no {SOURCE_SECTION} in the report: no per-line attribution")
    return result(StageStatus.PASSED, "; ".join([summary, *notes]), kernels, source)
