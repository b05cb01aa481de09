"""From a job's typed results to rows: metrics (pure extraction), stage records, the verdict.

Metric names are a contract with the dashboards (they query exactly these):
    bench, per shape      latency_median_us, latency_p10_us, latency_p90_us, tflops
                          series: candidate | baseline | <BenchResult peer name>
                          latency_ratio (candidate / baseline median), series candidate
    static, per arch      registers, spill_bytes, smem_bytes: the max over the kernel's functions,
                          shape "", series = arch (sm_80, sm_90a, ...)
    ncu, per shape        tensor_pipe_pct, ld_bank_conflict_pct, st_bank_conflict_pct,
                          warps_active_pct, dram_pct, sm_throughput_pct; series candidate | baseline
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from gate.domain import (
    BenchResult,
    JobResult,
    ProfileResult,
    SideResults,
    StaticResult,
    TimingSamples,
    VerdictReport,
)
from gate.domain.codec import to_json
from gate.domain.launches import by_shape, weighted
from gate.storage.models import Metric, StageRecord, VerdictRecord

LOWER, HIGHER = "lower", "higher"

# name -> (KernelMetrics attribute, unit, direction)
NCU_METRICS: dict[str, tuple[str, str, str]] = {
    "tensor_pipe_pct": ("tensor_pipe_pct", "%", HIGHER),
    "ld_bank_conflict_pct": ("ld_bank_conflict_pct", "%", LOWER),
    "st_bank_conflict_pct": ("st_bank_conflict_pct", "%", LOWER),
    "warps_active_pct": ("warps_active_pct", "%", HIGHER),
    "dram_pct": ("dram_pct", "%", HIGHER),
    "sm_throughput_pct": ("sm_throughput_pct", "%", HIGHER),
}


def _metric(name: str, value: float, unit: str, direction: str, *, shape: str = "", series: str) -> Metric:
    return Metric(name=name, value=float(value), unit=unit, direction=direction, shape=shape, series=series)


def _timing_metrics(timing: TimingSamples, shape: str, series: str) -> Iterable[Metric]:
    yield _metric("latency_median_us", timing.median_us, "us", LOWER, shape=shape, series=series)
    yield _metric("latency_p10_us", timing.p10_us, "us", LOWER, shape=shape, series=series)
    yield _metric("latency_p90_us", timing.p90_us, "us", LOWER, shape=shape, series=series)
    if timing.tflops is not None:
        yield _metric("tflops", timing.tflops, "TFLOP/s", HIGHER, shape=shape, series=series)


def bench_metrics(bench: BenchResult) -> list[Metric]:
    """Timings per shape. With several dtypes the shape key gets a `_<dtype>` suffix to stay unique."""
    several_dtypes = len({t.dtype for t in bench.shapes}) > 1
    out: list[Metric] = []
    for t in bench.shapes:
        shape = f"{t.shape}_{t.dtype}" if several_dtypes else t.shape
        out += _timing_metrics(t.candidate, shape, "candidate")
        if t.baseline is not None:
            out += _timing_metrics(t.baseline, shape, "baseline")
        for peer, timing in sorted(t.peers.items()):
            out += _timing_metrics(timing, shape, peer)
        if t.ratio is not None:
            out.append(_metric("latency_ratio", t.ratio, "x", LOWER, shape=shape, series="candidate"))
    return out


def static_metrics(static: StaticResult) -> list[Metric]:
    """Per arch, the worst function: the gate limits apply to every function of the kernel."""
    by_arch: dict[str, list] = defaultdict(list)
    for f in static.functions:
        by_arch[f.arch].append(f)
    out: list[Metric] = []
    for arch, functions in sorted(by_arch.items()):
        out.append(_metric("registers", max(f.registers for f in functions), "regs/thread", LOWER, series=arch))
        out.append(_metric("spill_bytes", max(f.spill_bytes for f in functions), "B", LOWER, series=arch))
        out.append(_metric("smem_bytes", max(f.smem_bytes for f in functions), "B", LOWER, series=arch))
    return out


def profile_metrics(profile: ProfileResult, series: str) -> list[Metric]:
    launches_by_shape = by_shape(profile.kernels)
    out: list[Metric] = []
    for shape, launches in sorted(launches_by_shape.items()):
        for name, (attr, unit, direction) in NCU_METRICS.items():
            value = weighted(launches, attr)
            if value is not None:
                out.append(_metric(name, value, unit, direction, shape=shape, series=series))
    return out


def extract_metrics(result: JobResult) -> list[Metric]:
    """Every figure of a job as unsaved `Metric` rows (revision, job, kernel, GPU kind left to the caller)."""
    out: list[Metric] = []
    if result.bench is not None:
        out += bench_metrics(result.bench)
    if result.candidate.static is not None:
        out += static_metrics(result.candidate.static)
    for series, side in (("candidate", result.candidate), ("baseline", result.baseline)):
        if side is not None and side.profile is not None:
            out += profile_metrics(side.profile, series)
    return out


def stage_records(result: JobResult) -> list[StageRecord]:
    """One row per (side, stage) that produced a result, with the result as JSON."""
    rows: list[StageRecord] = []

    def add(side: str, stage: str, value: object) -> None:
        if value is not None:
            rows.append(StageRecord(side=side, stage=stage, status=str(value.status),
                                    reason=value.reason or None, duration_s=value.duration_s,
                                    payload=to_json(value)))

    sides: list[tuple[str, SideResults | None]] = [("candidate", result.candidate), ("baseline", result.baseline)]
    for side_name, side in sides:
        if side is None:
            continue
        for stage in ("static", "build", "correctness", "profile"):
            add(side_name, stage, getattr(side, stage))
    add("joint", "bench", result.bench)
    return rows


def verdict_record(report: VerdictReport, result: JobResult | None, *, kernel: str, gpu_kind: str) -> VerdictRecord:
    fingerprint = result.fingerprint if result is not None else None
    return VerdictRecord(kernel=kernel, gpu_kind=gpu_kind, verdict=str(report.verdict), reason=report.reason,
                         rules=to_json(report.rules),
                         fingerprint=to_json(fingerprint) if fingerprint is not None else None)
