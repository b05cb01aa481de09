"""The gate's vocabulary, defined once: stages, sides and metric names (with unit and direction).
Every other module, the GPU child, the storage, the pages and the messages, names these things
through this module and never by a string literal; rule names (`Rule`) come from the rule catalogue
(`gate.domain.rule_catalog`), the verdicts' severity order from `gate.domain.verdict`.

The values are the strings stored in the database and sent in JSON: they are part of the public
contract (docs/design.md), so a value never changes; a new member may be added.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Stage(StrEnum):
    """The stages of a job, in the order the child runs them (`gate.pipeline.run.measure`)."""

    SOURCE = "source"              # parent side: the checkouts
    BOX = "box"                    # parent side: the box's limits, and the files it handed back
    STATIC = "static"              # ptxas resource report + SASS histogram
    BUILD = "build"                # the torch extension
    CORRECTNESS = "correctness"
    BENCH = "bench"                # candidate vs baseline vs peers, interleaved
    PROFILE = "profile"            # Nsight Compute


class Side(StrEnum):
    """Which revision a stage measured: the candidate, its baseline, or both at once (the bench)."""

    CANDIDATE = "candidate"
    BASELINE = "baseline"
    JOINT = "joint"


class Direction(StrEnum):
    LOWER = "lower"                # lower is better (latency, conflicts, registers)
    HIGHER = "higher"              # higher is better (throughput, % of peak)
    NEITHER = "neither"            # a count to read, not to push either way (SASS opcodes: more
                                   # tensor-core instructions can be the very point of a change)


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    direction: Direction
    label: str                     # how a page or a table names it
    worst_launch: bool = False     # per shape: the worst launch, not the duration-weighted mean


class Metric(StrEnum):
    """Figures stored per job (`gate.storage.recording`) and charted by the pages."""

    LATENCY_MEDIAN_US = "latency_median_us"
    LATENCY_P10_US = "latency_p10_us"
    LATENCY_P90_US = "latency_p90_us"
    LATENCY_MEDIAN_KCYCLES = "latency_median_kcycles"   # median x observed SM MHz / 1000 (clock-free)
    TFLOPS = "tflops"
    LATENCY_RATIO = "latency_ratio"            # candidate / baseline median
    REGISTERS = "registers"                    # static, per arch: the worst function
    SPILL_BYTES = "spill_bytes"
    SMEM_BYTES = "smem_bytes"
    TENSOR_PIPE_PCT = "tensor_pipe_pct"        # ncu, per shape: duration-weighted over launches
    LD_BANK_CONFLICT_PCT = "ld_bank_conflict_pct"
    ST_BANK_CONFLICT_PCT = "st_bank_conflict_pct"
    SHARED_CONFLICT_PCT = "shared_conflict_pct"   # ld + st pooled, worst launch: what max_bank_conflict_pct judges
    WARPS_ACTIVE_PCT = "warps_active_pct"
    DRAM_PCT = "dram_pct"
    SM_THROUGHPUT_PCT = "sm_throughput_pct"
    GLOBAL_SECTORS_PER_REQUEST = "global_sectors_per_request"   # uncoalesced global loads read high
    # SASS instructions per arch, summed over the kernel's functions: one metric per opcode family
    # (which opcodes each counts: `gate.nvidia.sass_families`) and the total.
    SASS_TENSOR_CORE = "sass_tensor_core"
    SASS_SHARED = "sass_shared"
    SASS_GLOBAL = "sass_global"
    SASS_ASYNC_COPY = "sass_async_copy"
    SASS_BARRIER = "sass_barrier"
    SASS_SHUFFLE = "sass_shuffle"
    SASS_TOTAL = "sass_total"

    @property
    def info(self) -> MetricInfo:
        return METRICS[self]

    @property
    def unit(self) -> str:
        return METRICS[self].unit

    @property
    def direction(self) -> Direction:
        return METRICS[self].direction


_L, _H, _N = Direction.LOWER, Direction.HIGHER, Direction.NEITHER
METRICS: dict[Metric, MetricInfo] = {m[0]: MetricInfo(m[0].value, *m[1:]) for m in (
    (Metric.LATENCY_MEDIAN_US, "us", _L, "latency (median)"),
    (Metric.LATENCY_P10_US, "us", _L, "latency (p10)"),
    (Metric.LATENCY_P90_US, "us", _L, "latency (p90)"),
    (Metric.LATENCY_MEDIAN_KCYCLES, "kcycles", _L, "latency (median, SM kilocycles)"),
    (Metric.TFLOPS, "TFLOP/s", _H, "throughput"),
    (Metric.LATENCY_RATIO, "x", _L, "latency vs baseline"),
    (Metric.REGISTERS, "regs/thread", _L, "registers"),
    (Metric.SPILL_BYTES, "B", _L, "spills"),
    (Metric.SMEM_BYTES, "B", _L, "static shared memory"),
    (Metric.TENSOR_PIPE_PCT, "%", _H, "tensor pipe"),
    (Metric.LD_BANK_CONFLICT_PCT, "%", _L, "ld conflicts"),
    (Metric.ST_BANK_CONFLICT_PCT, "%", _L, "st conflicts"),
    # one badly conflicted launch among clean ones makes the kernel conflicted: the worst launch counts
    (Metric.SHARED_CONFLICT_PCT, "%", _L, "bank conflicts (ld + st)", True),
    (Metric.WARPS_ACTIVE_PCT, "%", _H, "warps active"),
    (Metric.DRAM_PCT, "%", _H, "DRAM"),
    (Metric.SM_THROUGHPUT_PCT, "%", _H, "SM throughput"),
    # a ceiling: one uncoalesced launch among coalesced ones is what it must catch
    (Metric.GLOBAL_SECTORS_PER_REQUEST, "sectors/request", _L, "global-load sectors per request", True),
    (Metric.SASS_TENSOR_CORE, "instructions", _N, "tensor core"),
    (Metric.SASS_SHARED, "instructions", _N, "shared memory"),
    (Metric.SASS_GLOBAL, "instructions", _N, "global memory"),
    (Metric.SASS_ASYNC_COPY, "instructions", _N, "async copies"),
    (Metric.SASS_BARRIER, "instructions", _N, "barriers"),
    (Metric.SASS_SHUFFLE, "instructions", _N, "shuffles"),
    (Metric.SASS_TOTAL, "instructions", _N, "all instructions"),
)}

# The ncu figures stored per shape, each read from the `KernelMetrics` attribute of the same name and
# aggregated over a shape's launches by `gate.domain.launches.shape_figure`, as the rules read them.
NCU_METRICS = (Metric.TENSOR_PIPE_PCT, Metric.LD_BANK_CONFLICT_PCT, Metric.ST_BANK_CONFLICT_PCT,
               Metric.SHARED_CONFLICT_PCT, Metric.WARPS_ACTIVE_PCT, Metric.DRAM_PCT, Metric.SM_THROUGHPUT_PCT,
               Metric.GLOBAL_SECTORS_PER_REQUEST)
