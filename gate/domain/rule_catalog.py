"""The rule catalogue: one row per rule, the one place a rule is declared.

A row (`RuleSpec`) says what the rule reads and how it is bound, worded, keyed, stored and charted, and
its kind picks the builder that judges it (`gate.verdict.decide.BUILDERS`). The rest follows from the
rows (docs/architecture.md, step 5 of adding a rule), docs/manifest.md's gate table too (`manifest_table()`).

It lives in the domain, not beside the verdict's builders, because `Gates` is made from it and travels
to the GPU child in the `KernelSpec` (the bench reads the latency threshold, correctness the error
ratio), and the child imports only the domain: pure data here, how each kind is judged in `gate.verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from gate.domain.names import Metric, Stage


class Kind(StrEnum):
    """Which builder judges a rule, and what it reads, in the rule table's order (`decide` runs them so)."""

    STATIC_LIMIT = "static limit"        # a ptxas figure per function and arch, against a bound
    SASS = "SASS"                        # opcodes that must appear in the compiled code
    STATIC_INCREASE = "static increase"  # a ptxas figure's increase over the baseline's build
    CORRECTNESS = "correctness"          # the kernel's error against a high-precision reference
    LATENCY = "latency"                  # interleaved timing against the baseline
    INTEGRITY = "integrity"              # the measurement itself: hidden streams, the physical floor
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
    rule: str                            # the row's name in every rule table (a `Rule` once catalogued)
    kinds: tuple[Kind, ...]              # the first is its kind; max_smem_bytes is also judged per launch
    reads: str                           # what it reads (a ptxas field, an ncu metric, ...)
    unit: str                            # of its value and threshold
    meaning: str                         # docs/manifest.md's gate table says this
    bound: Bound = Bound.CEILING
    keyed: bool = True                   # the manifest sets it (False: always on, or shown only)
    key_name: str = ""                   # its manifest key when not named like the rule
    default: float | None = None         # the key's value when unset; None: the rule is off
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
        """Its manifest key and `Gates` field; None when always on."""
        return (self.key_name or self.rule) if self.keyed else None

_F, _N = Bound.FLOOR, Bound.NONE
_ABS, _REL = Kind.NCU_ABSOLUTE, Kind.NCU_RELATIVE

_ROWS = (
    RuleSpec("max_latency_regression_pct", (Kind.LATENCY,), "interleaved event timings of both sides", "us",
             "reject when the candidate's median is slower than the baseline's by more than this, **and** the "
             "difference is significant (the whole 95 % bootstrap interval of the ratio above the threshold, "
             "Mann-Whitney p < 0.05), per shape and dtype. Candidate and baseline are timed interleaved in "
             "one process", metric=Metric.LATENCY_RATIO,
             chart=Chart("ratio", "Latency vs baseline", "candidate / baseline")),
    RuleSpec("correctness", (Kind.CORRECTNESS,), "the max abs error against a float32/float64 reference",
             "abs err", "correctness: the kernel's max error against a float32/float64 reference may be at most "
             "this many times PyTorch's own low-precision error (with a floor of the dtype's epsilon)",
             key_name="max_error_ratio", default=4.0, positive=True),
    RuleSpec("max_registers", (Kind.STATIC_LIMIT,), "ptxas registers per thread", "registers",
             "registers per thread (ptxas), worst function per arch", integer=True,
             metric=Metric.REGISTERS,
             chart=Chart("registers", "Registers per thread", "registers per thread")),
    RuleSpec("max_spill_bytes", (Kind.STATIC_LIMIT,), "ptxas spill stores + loads", "bytes",
             "spill stores + loads (ptxas), worst function per arch", integer=True,
             words="spills", metric=Metric.SPILL_BYTES,
             chart=Chart("spills", "Spills", "spilled bytes ({unit})")),
    RuleSpec("max_smem_bytes", (Kind.STATIC_LIMIT, Kind.LAUNCH_CONFIG),
             "ptxas static shared memory; ncu `launch__shared_mem_per_block_static` + `_dynamic`", "bytes",
             "shared memory per block: the static part (ptxas) per function and arch, and, where the profile "
             "ran, static + dynamic (the launch's `<<<grid, block, bytes>>>`) per launch, worst launch per shape",
             integer=True, words="static shared memory", metric=Metric.SMEM_BYTES,
             chart=Chart("smem", "Static shared memory per block", "static shared memory ({unit})")),
    RuleSpec("require_sass", (Kind.SASS,), "the SASS opcode histogram per arch", "",
             "SASS base opcodes that must appear in the kernel's code for every arch, e.g. `[\"HMMA\"]`",
             bound=_N),
    RuleSpec("static_delta", (Kind.STATIC_INCREASE,), "ptxas figures and SASS opcodes of both builds",
             "registers", "what changed against the baseline's build: shown, never decisive", bound=_N, keyed=False),
    RuleSpec("max_registers_increase", (Kind.STATIC_INCREASE,), "ptxas registers of both builds", "registers",
             "registers per thread the candidate may add over the baseline's build, per function and arch",
             integer=True, words="registers", metric=Metric.REGISTERS),
    RuleSpec("max_spill_bytes_increase", (Kind.STATIC_INCREASE,), "ptxas spill bytes of both builds", "bytes",
             "spill bytes the candidate may add over the baseline's",
             integer=True, words="spill bytes", metric=Metric.SPILL_BYTES),
    RuleSpec("max_smem_bytes_increase", (Kind.STATIC_INCREASE,), "ptxas static shared memory of both builds",
             "bytes", "static shared memory the candidate may add over the baseline's", integer=True,
             words="smem bytes", metric=Metric.SMEM_BYTES),
    RuleSpec("all_streams_time", (Kind.INTEGRITY,), "time per call until every stream has finished", "us",
             "always on: the candidate's work on every stream was timed, not only the caller's stream", keyed=False),
    RuleSpec("physical_floor", (Kind.INTEGRITY,), "event time against the datasheet's peaks", "us",
             "always on: no time faster than the GPU's datasheet peaks allow", bound=_F, keyed=False),
    RuleSpec("timed_outputs", (Kind.INTEGRITY,), "outputs of randomly chosen timed calls against the reference",
             "wrong calls", "always on: the calls that were timed computed the right answer, not only the checked "
             "ones before them", keyed=False),
    RuleSpec("timing_methods_agree", (Kind.INTEGRITY,), "the timed figure against a device-wide clock", "us",
             "always on: the timing method saw the kernel's whole work (graph nodes, default streams)",
             bound=_F, keyed=False),
    RuleSpec("timer_untouched", (Kind.INTEGRITY,), "the timer's references, pinned before any import", "replaced",
             "always on: submitted code replaced no function the timer uses", keyed=False),
    RuleSpec("profile_matches_timing", (Kind.INTEGRITY,), "ncu kernel durations against the timed figure", "us",
             "always on: the profiled program is the timed one", bound=_N, keyed=False),
    RuleSpec("min_tensor_pipe_pct", (_ABS,), "ncu `sm__pipe_tensor_cycles_active`, duration-weighted over launches", "%",
             "tensor pipe active, % of peak sustained (ncu `sm__pipe_tensor_cycles_active`)",
             bound=_F, words="tensor pipe", pct_of_peak=True,
             metric=Metric.TENSOR_PIPE_PCT, chart=Chart("tensor", "Tensor pipe active", "% of peak")),
    RuleSpec("min_warps_active_pct", (_ABS,), "ncu `sm__warps_active`, duration-weighted over launches", "%",
             "`sm__warps_active`, % of peak", bound=_F, words="warps active",
             pct_of_peak=True, metric=Metric.WARPS_ACTIVE_PCT, chart=Chart("warps", "Warps active", "% of peak")),
    RuleSpec("min_dram_pct", (_ABS,), "ncu `gpu__dram_throughput`, duration-weighted over launches", "%",
             "`gpu__dram_throughput`, % of peak", bound=_F, words="DRAM throughput",
             pct_of_peak=True, metric=Metric.DRAM_PCT, chart=Chart("dram", "DRAM throughput", "% of peak")),
    RuleSpec("max_bank_conflict_pct", (_ABS,), "ncu `l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st` over the wavefronts, worst launch",
             "%", "excess shared-memory wavefronts over all shared wavefronts, loads and stores pooled, worst "
             "launch per shape", words="bank conflicts", pct_of_peak=True,
             metric=Metric.SHARED_CONFLICT_PCT,
             chart=Chart("conflicts", "Shared-memory bank conflicts", "% of wavefronts (loads + stores)")),
    RuleSpec("max_global_sectors_per_request", (_ABS,),
             "ncu `l1tex__t_sectors_pipe_lsu_mem_global_op_ld` over `l1tex__t_requests_...`, worst launch", "sectors/request",
             "uncoalesced global loads: 32-B sectors per warp-level global load request, worst launch per "
             "shape (4 for coalesced 4-byte loads, 32 when each thread reads its own sector); e.g. `8`",
             words="global loads", metric=Metric.GLOBAL_SECTORS_PER_REQUEST,
             chart=Chart("sectors", "Global-load sectors per request", "sectors per request")),
    RuleSpec("max_tensor_pipe_drop_pct", (_REL,), "ncu tensor pipe of both sides", "%",
             "relative to the baseline's profile: points of tensor-pipe utilisation the candidate may lose",
             bound=_F, words="tensor pipe", baseline_profile=True,
             metric=Metric.TENSOR_PIPE_PCT),
    RuleSpec("max_bank_conflict_increase_pct", (_REL,), "ncu pooled bank conflicts of both sides", "%",
             "relative to the baseline's profile: points of bank conflicts the candidate may add",
             words="bank conflicts", baseline_profile=True,
             metric=Metric.SHARED_CONFLICT_PCT),
)

# `Gates` fields that are not rules: they say where rules apply. Each takes a list of strings, [] by default.
SETTINGS = {"absolute_shapes": "shape labels the absolute ncu floors (`min_*`) apply to; each must be a "
                               "declared shape"}

# The rows of a rule table: a stage that failed as a whole has a row named after it (correctness is also
# a rule, per shape), every other row is a catalogue row's rule.
STAGE_ROWS = (Stage.STATIC, Stage.BUILD, Stage.BENCH, Stage.PROFILE)
Rule = StrEnum("Rule", [(name.upper(), name) for name in (*(s.value for s in STAGE_ROWS), *(s.rule for s in _ROWS))],
               module=__name__)
CATALOG: tuple[RuleSpec, ...] = tuple(replace(spec, rule=Rule(spec.rule)) for spec in _ROWS)

BY_RULE: dict[str, RuleSpec] = {spec.rule: spec for spec in CATALOG}     # no stage's row (`build`, `profile`)
BY_KEY: dict[str, RuleSpec] = {spec.key: spec for spec in CATALOG if spec.key is not None}


# The stored figures each rule judges, by the rule's name in a rule table: its own figure, and for the
# latency rule (which reads the ratio of median times) the times themselves. The compare page colours
# these and the kernel page marks their points with the verdict a failing row of the rule gave.
LATENCY_TIMES = (Metric.LATENCY_MEDIAN_US, Metric.LATENCY_P10_US, Metric.LATENCY_P90_US, Metric.LATENCY_MEDIAN_KCYCLES)
JUDGES: dict[str, frozenset[str]] = {
    s.rule: frozenset({s.metric.value} | ({t.value for t in LATENCY_TIMES} if s.metric is Metric.LATENCY_RATIO else set()))
    for s in CATALOG if s.metric is not None}


def of_kind(kind: Kind) -> tuple[RuleSpec, ...]:
    return tuple(spec for spec in CATALOG if kind in spec.kinds)


def manifest_table(catalog: tuple[RuleSpec, ...] = CATALOG) -> str:
    """docs/manifest.md's `[kernel.gates]` table: every manifest key of `catalog`, then the settings."""
    lines = ["| key | default | reads | meaning |", "|---|---|---|---|"]
    for s in (s for s in catalog if s.key is not None):
        default = "`[]`" if s.kind is Kind.SASS else "off" if s.default is None else f"`{s.default}`"
        lines.append(f"| `{s.key}` | {default} | {s.reads} | {s.meaning} |")
    lines += [f"| `{key}` | `[]` | | {meaning} |" for key, meaning in SETTINGS.items()]
    return "\n".join(lines)
