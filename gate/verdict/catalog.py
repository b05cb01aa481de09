"""The rule catalogue: one row per rule of the verdict, and everything the gate knows about it.

A row says what the rule reads, its bound (a ceiling or a floor), unit, the words its sentence uses,
whether its manifest key takes an integer or a percentage of peak, whether it needs the baseline's
profile, and its kind, which picks the row builder (`gate.verdict.rules`) that judges it. Every
other surface reads these rows instead of keeping its own list: the manifest's validation
(`gate.manifest.load`), the operators of the outbound messages (`gate.notify.messages`), the kernel
page's chart groups (`gate.figures.kernel_page`) and the gate table of docs/manifest.md (a test
compares it with `manifest_table()`). A gate of an existing kind is one row here, beside its names in
`gate.domain` (docs/architecture.md walks through one).

Pure data; imports only `gate.domain`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

from gate.domain.manifest import Gates
from gate.domain.names import Metric, Rule


class Kind(StrEnum):
    """Which row builder judges a rule, and what it reads."""

    CORRECTNESS = "correctness"          # the kernel's error against a high-precision reference
    LATENCY = "latency"                  # interleaved timing against the baseline
    INTEGRITY = "integrity"              # the measurement itself: hidden streams, the physical floor
    STATIC_LIMIT = "static limit"        # a ptxas figure per function and arch, against a bound
    STATIC_INCREASE = "static increase"  # a ptxas figure's increase over the baseline's build
    SASS = "SASS"                        # opcodes that must appear in the compiled code
    NCU_ABSOLUTE = "ncu absolute"        # a per-shape Nsight Compute figure, against a bound
    NCU_RELATIVE = "ncu relative"        # the same figure against the baseline's profile
    LAUNCH_CONFIG = "launch config"      # what each profiled launch asked for (<<<grid, block, smem>>>)


class Bound(StrEnum):
    """How a row's value stands against its threshold."""

    CEILING = "ceiling"      # passes at or below it
    FLOOR = "floor"          # passes at or above it
    NONE = "none"            # no numeric bound (an opcode list, a shown-only row)


@dataclass(frozen=True)
class Chart:
    """The kernel page's chart of a rule's stored figure, with the rule's threshold drawn on it."""

    key: str                 # the chart's id on the page
    title: str
    y_title: str


@dataclass(frozen=True)
class RuleSpec:
    rule: Rule                           # the row's name in every rule table
    kinds: tuple[Kind, ...]              # the first is its kind; max_smem_bytes is also judged per launch
    reads: str                           # what it reads (a ptxas field, an ncu metric, ...)
    unit: str                            # of its value and threshold
    meaning: str                         # docs/manifest.md's gate table says this
    bound: Bound = Bound.CEILING
    keyed: bool = True                   # the manifest sets it (False: always on, or shown only)
    key_name: str = ""                   # its `Gates` field when not named like the rule
    default: str = "off"                 # as docs/manifest.md shows it
    words: str = ""                      # what its sentence calls the figure ("tensor pipe 34 % ...")
    integer: bool = False                # the manifest key takes an integer
    pct_of_peak: bool = False            # the manifest key is a % of peak: at most 100
    positive: bool = False               # the manifest key must be > 0 (not only >= 0)
    baseline_profile: bool = False       # reads the baseline's Nsight Compute profile too
    metric: Metric | None = None         # the figure it judges, as stored; static rows: the
                                         # `FunctionResources` field of the same name
    chart: Chart | None = None           # drawn on the kernel page with its threshold

    @property
    def kind(self) -> Kind:
        return self.kinds[0]

    @property
    def key(self) -> str | None:
        """Its `Gates` field and manifest key (a rule is named after it); None when always on."""
        return (self.key_name or self.rule.value) if self.keyed else None


_F, _N = Bound.FLOOR, Bound.NONE
_ABS, _REL = Kind.NCU_ABSOLUTE, Kind.NCU_RELATIVE

# Within a kind, row order is the order `decide` emits rows in, so it also breaks ties between rules
# of one kind that fail together (the first failing rule of the same cause rank is named).
CATALOG: tuple[RuleSpec, ...] = (
    RuleSpec(Rule.MAX_LATENCY_REGRESSION_PCT, (Kind.LATENCY,), "interleaved event timings of both sides", "us",
             "reject when the candidate's median is slower than the baseline's by more than this, **and** the "
             "difference is significant (the whole 95 % bootstrap interval of the ratio above the threshold, "
             "Mann-Whitney p < 0.05), per shape and dtype. Candidate and baseline are timed interleaved in "
             "one process", metric=Metric.LATENCY_RATIO,
             chart=Chart("ratio", "Latency vs baseline", "candidate / baseline")),
    RuleSpec(Rule.CORRECTNESS, (Kind.CORRECTNESS,), "the max abs error against a float32/float64 reference",
             "abs err", "correctness: the kernel's max error against a float32/float64 reference may be at most "
             "this many times PyTorch's own low-precision error (with a floor of the dtype's epsilon)",
             key_name="max_error_ratio", default="`4.0`", positive=True),
    RuleSpec(Rule.MAX_REGISTERS, (Kind.STATIC_LIMIT,), "ptxas registers per thread", "registers",
             "registers per thread (ptxas), worst function per arch", integer=True,
             metric=Metric.REGISTERS,
             chart=Chart("registers", "Registers per thread", "registers per thread")),
    RuleSpec(Rule.MAX_SPILL_BYTES, (Kind.STATIC_LIMIT,), "ptxas spill stores + loads", "bytes",
             "spill stores + loads (ptxas), worst function per arch", integer=True,
             words="spills", metric=Metric.SPILL_BYTES,
             chart=Chart("spills", "Spills", "spilled bytes ({unit})")),
    RuleSpec(Rule.MAX_SMEM_BYTES, (Kind.STATIC_LIMIT, Kind.LAUNCH_CONFIG),
             "ptxas static shared memory; ncu `launch__shared_mem_per_block_static` + `_dynamic`", "bytes",
             "shared memory per block: the static part (ptxas) per function and arch, and, where the profile "
             "ran, static + dynamic (the launch's `<<<grid, block, bytes>>>`) per launch, worst launch per shape",
             integer=True, words="static shared memory", metric=Metric.SMEM_BYTES,
             chart=Chart("smem", "Static shared memory per block", "static shared memory ({unit})")),
    RuleSpec(Rule.REQUIRE_SASS, (Kind.SASS,), "the SASS opcode histogram per arch", "",
             "SASS base opcodes that must appear in the kernel's code for every arch, e.g. `[\"HMMA\"]`",
             bound=_N, default="`[]`"),
    RuleSpec(Rule.STATIC_DELTA, (Kind.STATIC_INCREASE,), "ptxas figures and SASS opcodes of both builds",
             "registers", "what changed against the baseline's build: shown, never decisive", bound=_N, keyed=False),
    RuleSpec(Rule.MAX_REGISTERS_INCREASE, (Kind.STATIC_INCREASE,), "ptxas registers of both builds", "registers",
             "registers per thread the candidate may add over the baseline's build, per function and arch",
             integer=True, words="registers", metric=Metric.REGISTERS),
    RuleSpec(Rule.MAX_SPILL_BYTES_INCREASE, (Kind.STATIC_INCREASE,), "ptxas spill bytes of both builds", "bytes",
             "spill bytes the candidate may add over the baseline's",
             integer=True, words="spill bytes", metric=Metric.SPILL_BYTES),
    RuleSpec(Rule.MAX_SMEM_BYTES_INCREASE, (Kind.STATIC_INCREASE,), "ptxas static shared memory of both builds",
             "bytes", "static shared memory the candidate may add over the baseline's", integer=True,
             words="smem bytes", metric=Metric.SMEM_BYTES),
    RuleSpec(Rule.ALL_STREAMS_TIME, (Kind.INTEGRITY,), "time per call until every stream has finished", "us",
             "always on: the candidate's work on every stream was timed, not only the caller's stream", keyed=False),
    RuleSpec(Rule.PHYSICAL_FLOOR, (Kind.INTEGRITY,), "event time against the datasheet's peaks", "us",
             "always on: no time faster than the GPU's datasheet peaks allow", bound=_F, keyed=False),
    RuleSpec(Rule.TIMED_OUTPUTS, (Kind.INTEGRITY,), "outputs of randomly chosen timed calls against the reference",
             "wrong calls", "always on: the calls that were timed computed the right answer, not only the checked "
             "ones before them", keyed=False),
    RuleSpec(Rule.TIMING_METHODS_AGREE, (Kind.INTEGRITY,), "the timed figure against a device-wide clock", "us",
             "always on: the timing method saw the kernel's whole work (graph nodes, default streams)",
             bound=_F, keyed=False),
    RuleSpec(Rule.TIMER_UNTOUCHED, (Kind.INTEGRITY,), "the timer's references, pinned before any import", "replaced",
             "always on: submitted code replaced no function the timer uses", keyed=False),
    RuleSpec(Rule.PROFILE_MATCHES_TIMING, (Kind.INTEGRITY,), "ncu kernel durations against the timed figure", "us",
             "always on: the profiled program is the timed one", bound=_N, keyed=False),
    RuleSpec(Rule.MIN_TENSOR_PIPE_PCT, (_ABS,), "ncu `sm__pipe_tensor_cycles_active`, duration-weighted over launches", "%",
             "tensor pipe active, % of peak sustained (ncu `sm__pipe_tensor_cycles_active`)",
             bound=_F, words="tensor pipe", pct_of_peak=True,
             metric=Metric.TENSOR_PIPE_PCT, chart=Chart("tensor", "Tensor pipe active", "% of peak")),
    RuleSpec(Rule.MIN_WARPS_ACTIVE_PCT, (_ABS,), "ncu `sm__warps_active`, duration-weighted over launches", "%",
             "`sm__warps_active`, % of peak", bound=_F, words="warps active",
             pct_of_peak=True, metric=Metric.WARPS_ACTIVE_PCT, chart=Chart("warps", "Warps active", "% of peak")),
    RuleSpec(Rule.MIN_DRAM_PCT, (_ABS,), "ncu `gpu__dram_throughput`, duration-weighted over launches", "%",
             "`gpu__dram_throughput`, % of peak", bound=_F, words="DRAM throughput",
             pct_of_peak=True, metric=Metric.DRAM_PCT, chart=Chart("dram", "DRAM throughput", "% of peak")),
    RuleSpec(Rule.MAX_BANK_CONFLICT_PCT, (_ABS,), "ncu `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st` over the wavefronts, worst launch",
             "%", "excess shared-memory wavefronts over all shared wavefronts, loads and stores pooled, worst "
             "launch per shape", words="bank conflicts", pct_of_peak=True,
             metric=Metric.SHARED_CONFLICT_PCT,
             chart=Chart("conflicts", "Shared-memory bank conflicts", "% of wavefronts (loads + stores)")),
    RuleSpec(Rule.MAX_GLOBAL_SECTORS_PER_REQUEST, (_ABS,),
             "ncu `l1tex__t_sectors_pipe_lsu_mem_global_op_ld` over `l1tex__t_requests_...`, worst launch", "sectors/request",
             "uncoalesced global loads: 32-B sectors per warp-level global load request, worst launch per "
             "shape (4 for coalesced 4-byte loads, 32 when each thread reads its own sector); e.g. `8`",
             words="global loads", metric=Metric.GLOBAL_SECTORS_PER_REQUEST,
             chart=Chart("sectors", "Global-load sectors per request", "sectors per request")),
    RuleSpec(Rule.MAX_TENSOR_PIPE_DROP_PCT, (_REL,), "ncu tensor pipe of both sides", "%",
             "relative to the baseline's profile: points of tensor-pipe utilisation the candidate may lose",
             bound=_F, words="tensor pipe", baseline_profile=True,
             metric=Metric.TENSOR_PIPE_PCT),
    RuleSpec(Rule.MAX_BANK_CONFLICT_INCREASE_PCT, (_REL,), "ncu pooled bank conflicts of both sides", "%",
             "relative to the baseline's profile: points of bank conflicts the candidate may add",
             words="bank conflicts", baseline_profile=True,
             metric=Metric.SHARED_CONFLICT_PCT),
)

# `Gates` fields that are not rules: they say where rules apply.
SETTINGS = (("absolute_shapes", "`[]`", "shape labels the absolute ncu floors (`min_*`) apply to; each must be "
                                        "a declared shape"),)

BY_RULE: dict[str, RuleSpec] = {spec.rule.value: spec for spec in CATALOG}
BY_KEY: dict[str, RuleSpec] = {spec.key: spec for spec in CATALOG if spec.key is not None}


def spec_of(rule: str) -> RuleSpec | None:
    """The catalogue row of a rule table's row name; None for a stage's row (`build`, `profile`)."""
    return BY_RULE.get(rule)


def of_kind(kind: Kind, catalog: tuple[RuleSpec, ...] = CATALOG) -> tuple[RuleSpec, ...]:
    return tuple(spec for spec in catalog if kind in spec.kinds)


def threshold_of(spec: RuleSpec, gates: Gates) -> float | int | list[str] | None:
    """The manifest's bound for `spec`; None (or []) when the rule is off or has no key."""
    return getattr(gates, spec.key) if spec.key is not None else None


def profile_rules_set(gates: Gates) -> bool:
    """Whether a rule reads the Nsight Compute profile: without one, the profile stage is optional."""
    return any(threshold_of(s, gates) is not None for s in CATALOG if s.kind in (_ABS, _REL))


# Of several failing rules the reason names the cause before the symptom: a broken build or a wrong
# answer, then what the compiler and the profiler measured, then the latency they explain.
_FIRST_CAUSES = (Rule.STATIC, Rule.BUILD, Rule.TIMED_OUTPUTS)   # a wrong timed call is a wrong answer


def cause_rank(rule: str) -> int:
    spec = spec_of(rule)
    if rule in _FIRST_CAUSES or (spec is not None and spec.kind is Kind.CORRECTNESS):
        return 0
    return 2 if spec is not None and spec.kind is Kind.LATENCY else 1


def manifest_table(catalog: tuple[RuleSpec, ...] = CATALOG) -> str:
    """docs/manifest.md's `[kernel.gates]` table: every manifest key of `catalog`, then the settings."""
    lines = ["| key | default | reads | meaning |", "|---|---|---|---|"]
    lines += [f"| `{s.key}` | {s.default} | {s.reads} | {s.meaning} |" for s in catalog if s.key is not None]
    lines += [f"| `{key}` | {default} | | {meaning} |" for key, default, meaning in SETTINGS]
    return "\n".join(lines)


def gates_keys() -> set[str]:
    """Every field of `Gates`, which the catalogue and `SETTINGS` must cover exactly."""
    return {f.name for f in dataclasses.fields(Gates)}
