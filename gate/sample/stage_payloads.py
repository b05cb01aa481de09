"""The stage payloads of one synthetic job: build log, SASS, correctness cases, timing samples, profile
(SYNTHETIC SAMPLE DATA), as the gate's own result types so the pages read them like measured ones."""

from __future__ import annotations

import math
from typing import Any

from gate.domain import (
    BenchResult, BuildResult, CorrectnessCase, CorrectnessResult, FunctionResources, KernelMetrics,
    ProfileResult, ShapeTiming, StageStatus, StaticResult, TimingSamples,
)
from gate.domain.codec import to_json
from gate.sample.kernel_model import KernelModel
from gate.sample.kernels import ARCHES
from gate.domain.names import Side, Stage

NO_NCU = "ncu is not installed on this worker"   # why the story's one unprofiled job was not profiled


def static_result(m: KernelModel, regs: int) -> StaticResult:
    """The static stage of one job: `regs` registers, and SASS with ldmatrix once the kernel took more
    registers than its kind starts with (the story's ldmatrix commit). Its stored figures are the
    gate's own extraction of it (`gate.sample.judging`), so the charts read what the payload says."""
    fn = function_name(m)
    hmma = 384 if m.kind.tensor_pipe_pct else 0
    opcodes = {"HMMA": hmma, "LDSM": 96 if regs > m.kind.registers else 0, "LDS": 212,
               "FFMA": 640, "MUFU": 64, "STS": 48, "BAR": 18, "LDG": 32}
    return StaticResult(StageStatus.PASSED, duration_s=2.1, sass_available=True, functions=[
        FunctionResources(fn, arch, regs, m.kind.smem_bytes, 0, 0, 0,
                          {k: v for k, v in opcodes.items() if v}) for arch in ARCHES],
        log="\n".join(f"ptxas info    : Used {regs} registers, {m.kind.smem_bytes} bytes smem, "
                      f"400 bytes cmem[0] ({arch})" for arch in ARCHES))


def function_name(m: KernelModel) -> str:
    """The mangled name the sample kernel's one function compiles to."""
    return f"_Z{len(m.name) + 4}{m.name}_fwdPK6__halfS1_S1_PS_"


def stage_payloads(m: KernelModel, sha: str, timings: list, pipe: float, conflicts: float, regs: int,
                   profiled: bool) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(side, stage, status, reason, payload) of each stage; `timings` holds (shape, candidate µs,
    baseline µs, peers) per shape."""
    rng = m.rng
    fn = function_name(m)
    static = static_result(m, regs)
    build = BuildResult(StageStatus.PASSED, duration_s=38.4, cache_hits=1, cache_misses=2,
                        log=f"[1/3] nvcc -O3 -gencode arch=compute_90,code=sm_90 -c {m.name}.cu\n"
                            "[2/3] c++ -O3 -c flashcore_binding.cpp\n[3/3] c++ -shared -o "
                            f"{m.name}.so\n(synthetic sample data at {sha[:10]})")
    cases = [CorrectnessCase(shape, "float16", seed, True, max_abs_err=rng.uniform(4e-4, 1.2e-3),
                             mean_abs_err=rng.uniform(2e-5, 6e-5), torch_max_abs_err=9.8e-4,
                             tolerance=3.9e-3)
             for shape, *_ in timings for seed in (0, 1, 2)]
    correctness = CorrectnessResult(StageStatus.PASSED, duration_s=4.7, cases=cases)
    bench = BenchResult(StageStatus.PASSED, duration_s=31.0, shapes=[
        ShapeTiming(shape, "float16", _samples(m, cand), _samples(m, base),
                    {p: _samples(m, us) for p, us in peers.items()}, ratio=cand / base,
                    ratio_ci_low=cand / base - 0.006, ratio_ci_high=cand / base + 0.006,
                    p_value=0.003 if abs(cand / base - 1) > 0.02 else 0.41, rounds=40)
        for shape, cand, base, peers in timings])
    kernels = [KernelMetrics(fn, shape, duration_ns=cand * 1e3, tensor_pipe_pct=pipe,
                             ld_bank_conflict_pct=conflicts, st_bank_conflict_pct=0.4,
                             warps_active_pct=41.0, dram_pct=48.0, sm_throughput_pct=pipe + 18,
                             registers=regs, smem_per_block_bytes=m.kind.smem_bytes)
               for shape, cand, *_ in timings]
    profile = (ProfileResult(StageStatus.PASSED, duration_s=57.0, kernels=kernels,
                             ncu_version="2025.1.1.0")
               if profiled else
               ProfileResult(StageStatus.NOT_RUN, reason=NO_NCU))
    return [(side, name, r.status.value, r.reason, to_json(r)) for side, name, r in (
        (Side.CANDIDATE, Stage.STATIC, static), (Side.CANDIDATE, Stage.BUILD, build),
        (Side.CANDIDATE, Stage.CORRECTNESS, correctness), (Side.JOINT, Stage.BENCH, bench),
        (Side.CANDIDATE, Stage.PROFILE, profile))]


def _samples(m: KernelModel, median_us: float) -> TimingSamples:
    """40 interleaved-round samples: log-normal spread of ~0.8 % and a few slow outliers."""
    xs = sorted(median_us * math.exp(m.rng.gauss(0, 0.008)) * (1.05 if i % 13 == 12 else 1.0)
                for i in range(40))
    return TimingSamples([round(x, 3) for x in xs], xs[20], xs[4], xs[36])
