"""From a job's typed results to rows: metrics (pure extraction), stage records, the verdict.

Metric names, units and directions are `gate.domain.names.Metric`; what is stored where:
    bench, per shape      latency median/p10/p90, tflops
                          series: candidate | baseline | <BenchResult peer name>
                          latency_median_kcycles beside the median where the GPU watch saw the SM
                          clock (median µs x median busy SM MHz / 1000)
                          latency_ratio (candidate / baseline median), series candidate
    static, per arch      registers, spill_bytes, smem_bytes: the max over the kernel's functions,
                          shape "", series = arch (sm_80, sm_90a, ...)
                          sass_* (`gate.nvidia.sass_families.SASS_METRICS`): instructions of each
                          opcode family and in all, summed over the kernel's functions, where a
                          disassembler read the SASS (none stored without it: 0 would be a lie)
    ncu, per shape        `NCU_METRICS`, as the rules read them (`shape_figure`: duration-weighted
                          over launches, or the worst launch: shared_conflict_pct, loads and
                          stores pooled); series candidate | baseline
Every row carries the job's environment key (GPU model | driver | clock policy,
`gate.domain.environment`): history compares like with like. The bench's rows are the one record of
its summary figures: its stage row's payload leaves them out (`stage_payloads`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from gate.domain import (
    BenchResult,
    JobResult,
    ProfileResult,
    StaticResult,
    TimingSamples,
    VerdictReport,
)
from gate.domain.codec import to_json
from gate.domain.environment import environment_key, kilocycles
from gate.domain.launches import by_shape, shape_figure
from gate.domain.names import NCU_METRICS, Side, Stage
from gate.domain.names import Metric as M
from gate.nvidia.sass_families import family_counts
from gate.storage.models import Metric, StageRecord, VerdictRecord
from gate.storage.stage_payloads import (
    RATIO_FIGURE,
    RATIO_SERIES,
    TIMING_FIGURES,
    has_several_dtypes,
    shape_key,
    stored_payload,
)


def _metric(name: M, value: float, *, shape: str = "", series: str) -> Metric:
    return Metric(name=name.value, value=float(value), unit=name.unit, direction=name.direction.value,
                  shape=shape, series=str(series))


def _timing_metrics(timing: TimingSamples, shape: str, series: str,
                    sm_clock_mhz: float | None = None) -> Iterable[Metric]:
    for field, name in TIMING_FIGURES.items():
        value = getattr(timing, field)
        if value is not None:                      # tflops: None without a FLOP count
            yield _metric(name, value, shape=shape, series=series)
    if sm_clock_mhz:     # derived (median x clock), kept as a row: the history compares in kilocycles
        yield _metric(M.LATENCY_MEDIAN_KCYCLES, kilocycles(timing.median_us, sm_clock_mhz), shape=shape,
                      series=series)


def bench_metrics(bench: BenchResult) -> list[Metric]:
    """Timings per shape (`shape_key`)."""
    several_dtypes = has_several_dtypes(t.dtype for t in bench.shapes)
    watch = bench.gpu_watch
    mhz = watch.sm_clock_mhz_median if watch is not None and watch.available else None
    out: list[Metric] = []
    for t in bench.shapes:
        shape = shape_key(t.shape, t.dtype, several_dtypes)
        out += _timing_metrics(t.candidate, shape, Side.CANDIDATE, mhz)
        if t.baseline is not None:
            out += _timing_metrics(t.baseline, shape, Side.BASELINE, mhz)
        for peer, timing in sorted(t.peers.items()):
            out += _timing_metrics(timing, shape, peer, mhz)
        if t.ratio is not None:
            out.append(_metric(RATIO_FIGURE, t.ratio, shape=shape, series=RATIO_SERIES))
    return out


def static_metrics(static: StaticResult) -> list[Metric]:
    """Per arch, the worst function (the gate limits apply to every function of the kernel) and, where
    the SASS was read, the opcode families summed over the functions, as the revision page's SASS
    chart sums them."""
    by_arch: dict[str, list] = defaultdict(list)
    for f in static.functions:
        by_arch[f.arch].append(f)
    out: list[Metric] = []
    for arch, functions in sorted(by_arch.items()):
        out.append(_metric(M.REGISTERS, max(f.registers for f in functions), series=arch))
        out.append(_metric(M.SPILL_BYTES, max(f.spill_bytes for f in functions), series=arch))
        out.append(_metric(M.SMEM_BYTES, max(f.smem_bytes for f in functions), series=arch))
        if static.sass_available:
            counts = family_counts(f.sass_opcodes for f in functions)
            out += [_metric(name, n, series=arch) for name, n in counts.items()]
    return out


def profile_metrics(profile: ProfileResult, series: str) -> list[Metric]:
    launches_by_shape = by_shape(profile.kernels)
    out: list[Metric] = []
    for shape, launches in sorted(launches_by_shape.items()):
        for name in NCU_METRICS:                       # each is a KernelMetrics attribute too
            value = shape_figure(launches, name)       # the figure the rules judge
            if value is not None:
                out.append(_metric(name, value, shape=shape, series=series))
    return out


def extract_metrics(result: JobResult) -> list[Metric]:
    """Every figure of a job as unsaved `Metric` rows, each with the job's environment key (revision,
    job, kernel, GPU kind left to the caller)."""
    out: list[Metric] = []
    if result.bench is not None:
        out += bench_metrics(result.bench)
    if result.candidate.static is not None:
        out += static_metrics(result.candidate.static)
    for series, side in ((Side.CANDIDATE, result.candidate), (Side.BASELINE, result.baseline)):
        if side is not None and side.profile is not None:
            out += profile_metrics(side.profile, series)
    environment = job_environment(result)
    for metric in out:
        metric.environment = environment
    return out


def job_environment(result: JobResult) -> str:
    """The environment key of a job's figures: its fingerprint and the clock policy its bench ran under."""
    fp = result.fingerprint
    policy = result.bench.clock_policy if result.bench is not None else ""
    return environment_key(fp.gpu_name if fp else "", fp.driver if fp else "", policy)


def stage_records(result: JobResult) -> list[StageRecord]:
    """One row per (side, stage) that produced a result, with the result as JSON less what the row's
    columns and the metric rows hold (`stage_payloads`)."""
    rows: list[StageRecord] = []

    def add(side: Side, stage: Stage, value: object) -> None:
        if value is not None:
            rows.append(StageRecord(side=side.value, stage=stage.value, status=str(value.status),
                                    reason=value.reason or None, duration_s=value.duration_s,
                                    payload=stored_payload(stage, value)))

    for side_name, side in ((Side.CANDIDATE, result.candidate), (Side.BASELINE, result.baseline)):
        if side is None:
            continue
        for stage in (Stage.STATIC, Stage.BUILD, Stage.CORRECTNESS, Stage.PROFILE):
            add(side_name, stage, getattr(side, stage.value))
    add(Side.JOINT, Stage.BENCH, result.bench)
    return rows


def verdict_record(report: VerdictReport, result: JobResult | None, *, kernel: str, gpu_kind: str) -> VerdictRecord:
    fingerprint = result.fingerprint if result is not None else None
    return VerdictRecord(kernel=kernel, gpu_kind=gpu_kind, verdict=str(report.verdict), reason=report.reason,
                         rules=to_json(report.rules),
                         fingerprint=to_json(fingerprint) if fingerprint is not None else None)
