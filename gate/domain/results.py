"""Typed results of every pipeline stage. They cross the GPU child's process boundary as JSON.

Convention: a kernel fault is `StageStatus.FAILED` with evidence in `reason`/`log`; a stage that could
not run here is `NOT_RUN` (its `reason` says why, e.g. "not run: no CUDA device"); an infrastructure
fault met while running is `ERROR`. Only `PASSED` stages can carry a verdict to `accept`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from gate.domain.names import Stage
from gate.domain.source_lines import KernelSourceProfile
from gate.domain.wording import NO_GPU


class StageStatus(StrEnum):
    PASSED = "passed"      # ran, kernel behaved
    FAILED = "failed"      # ran, kernel at fault (compile error, wrong answer, crash, hang)
    NOT_RUN = "not_run"    # could not run here (no GPU, no baseline, disabled)
    ERROR = "error"        # the gate's own machinery failed (tool missing, counters not permitted)


@dataclass
class FunctionResources:
    """ptxas and SASS figures of one kernel function for one target arch."""

    function: str                 # mangled entry name as ptxas prints it
    arch: str                     # sm_80, sm_90a, ...
    registers: int                # per thread
    smem_bytes: int               # static shared memory per block
    stack_bytes: int              # stack frame
    spill_store_bytes: int
    spill_load_bytes: int
    sass_opcodes: dict[str, int] = field(default_factory=dict)  # base opcode (HMMA, LDSM, ...) -> count

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclass
class StaticResult:
    status: StageStatus
    reason: str = ""
    duration_s: float = 0.0
    functions: list[FunctionResources] = field(default_factory=list)
    sass_available: bool = False  # False when no disassembler was found: SASS rules cannot pass
    log: str = ""                 # compiler output (ptxas -v), kept as evidence
    flags: dict[str, list[str]] = field(default_factory=dict)   # the manifest's flags it was built with, by key


@dataclass
class BuildResult:
    status: StageStatus
    reason: str = ""
    duration_s: float = 0.0
    cache_hits: int = 0           # compiled objects reused from the content-addressed cache
    cache_misses: int = 0
    module_path: str = ""         # the built extension (.so)
    log: str = ""


@dataclass
class CorrectnessCase:
    shape: str                    # Shape.label
    dtype: str
    seed: int
    passed: bool
    max_abs_err: float | None = None
    mean_abs_err: float | None = None
    torch_max_abs_err: float | None = None   # PyTorch's own low-precision result vs the same reference
    tolerance: float | None = None
    reason: str = ""              # "NaN in output (unwritten elements?)", "inputs modified", ...


@dataclass
class CorrectnessResult:
    status: StageStatus
    reason: str = ""
    duration_s: float = 0.0
    cases: list[CorrectnessCase] = field(default_factory=list)


@dataclass
class TimingSamples:
    samples_us: list[float]
    median_us: float
    p10_us: float
    p90_us: float
    tflops: float | None = None


@dataclass
class ShapeTiming:
    shape: str
    dtype: str
    candidate: TimingSamples
    baseline: TimingSamples | None = None
    peers: dict[str, TimingSamples] = field(default_factory=dict)  # "sdpa_flash", "cublas", ...
    ratio: float | None = None            # candidate / baseline median (>1 is slower)
    ratio_ci_low: float | None = None     # 95 % bootstrap interval of the median ratio
    ratio_ci_high: float | None = None
    p_value: float | None = None          # two-sided Mann-Whitney U
    rounds: int = 0                       # interleaved rounds taken
    rel_se_pct: float | None = None       # relative standard error of the candidate median
    method: str = "events"                # "events" or "graph" (launch-bound kernels)
    launches: int = 1                     # calls per timed repetition (graph: launches per replay)
    all_streams_us: float | None = None   # candidate's time per call until every stream finished
    enqueue_us: float | None = None       # ... of which the host's time to enqueue one call
    caller_stream_us: float | None = None  # ... and the caller's stream's time per call in that loop
    floor_us: float | None = None         # physical floor of one call on this GPU (roofline.py)
    floor_basis: str = ""                 # what bound the floor: "compute 2.1 GFLOP at 989 TFLOP/s"
    # Issue 25, what keeps the figure honest: the candidate's calls checked in full, timed ones and
    # (issue 43) the checking pass's, and how many of them were wrong ("timed call 37: unwritten ...").
    timed_checked: int | None = None      # None: a bench from before these checks
    timed_wrong: int = 0
    timed_evidence: str = ""
    eager_us: float | None = None         # the candidate's eager event time (the method's estimate)
    graph_us: float | None = None         # ... its graph replay time per launch, when a graph was captured
    graph_work_nodes: int | None = None   # kernel/memcpy/memset nodes in its graph, for `launches` calls
    method_note: str = ""                 # why the method is what it is: kept from history, a graph refused


@dataclass
class GpuWatch:
    """What NVML saw of the GPU while the bench timed (`gate.nvidia.gpu_watch`). Figures are over
    the samples taken while the GPU was busy (the idle reason not set); `problems` says in words why
    the timings are not to be trusted (clocks moved, throttling, another process on the GPU)."""

    available: bool = False
    reason: str = ""                          # why not available ("no NVML: ...")
    samples: int = 0
    interval_ms: float = 0.0
    sm_clock_mhz_min: int | None = None
    sm_clock_mhz_max: int | None = None
    sm_clock_mhz_median: float | None = None  # what cycle-normalised figures divide by
    mem_clock_mhz_min: int | None = None
    mem_clock_mhz_max: int | None = None
    temperature_c_max: int | None = None
    power_w_max: float | None = None
    clock_events: list[str] = field(default_factory=list)     # throttle reasons seen while busy
    other_processes: list[str] = field(default_factory=list)  # "pid 1234: 2048 MiB"
    busy_while_idle_pct: list[int] = field(default_factory=list)  # utilisation while this job was idle
    problems: list[str] = field(default_factory=list)
    # When every problem is GPU Boost's own regulation (clocks moved, software power cap): how far (%)
    # the clocks moved. Latency verdicts stand then, with this noted. None when a problem forbids any
    # verdict (sharing, thermal or hardware slowdown) or when there is no problem.
    boost_spread_pct: float | None = None


@dataclass
class BenchResult:
    status: StageStatus
    reason: str = ""
    duration_s: float = 0.0
    shapes: list[ShapeTiming] = field(default_factory=list)
    attempts: int = 1                     # > 1 when an inconclusive comparison was rerun
    gpu_watch: GpuWatch | None = None     # clocks, throttling and other processes while timing
    clock_policy: str = "observe"         # applied: `ClockPolicy` (lock falls back to observe)
    clock_note: str = ""                  # what the policy did: "SM clock locked at 1755 MHz", why not
    tampered: list[str] = field(default_factory=list)   # timer references submitted code replaced

    @property
    def checked_calls(self) -> int:
        """The candidate's calls checked in full over every shape (timed and the checking pass's)."""
        return sum(st.timed_checked or 0 for st in self.shapes)


@dataclass
class KernelMetrics:
    """Gate metrics of one profiled kernel launch (Nsight Compute). `None` = not collected (n/a)."""

    kernel: str                           # function name
    demangled: str = ""                   # full signature ("void ns::k<(int)4>(float *)")
    mangled: str = ""                     # "_ZN2ns1kILi4EEEvPf", the name ptxas prints: static rules match it
                                          # first ("" in profiles stored before it was read)
    shape: str = ""
    dtype: str = ""
    duration_ns: float | None = None
    tensor_pipe_pct: float | None = None      # tensor pipe cycles active, % of peak sustained active
    hmma_inst_pct: float | None = None
    gmma_inst_pct: float | None = None        # sm_90 only: warpgroup MMA instructions
    ld_bank_conflict_pct: float | None = None  # conflicts / wavefronts, shared loads (LDS + LDSM)
    st_bank_conflict_pct: float | None = None
    ld_bank_conflicts: float | None = None
    ld_wavefronts: float | None = None
    st_bank_conflicts: float | None = None
    st_wavefronts: float | None = None
    ld_requests: float | None = None          # shared-load warp instructions: LDS + LDSM
    warps_active_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    dram_pct: float | None = None
    sm_throughput_pct: float | None = None
    registers: int | None = None
    smem_per_block_bytes: int | None = None   # static + dynamic + the driver's reserved share
    smem_static_bytes: int | None = None      # __shared__ arrays (what ptxas reports)
    smem_dynamic_bytes: int | None = None     # the launch's dynamic shared memory (<<<g, b, bytes>>>)
    global_ld_sectors: float | None = None    # L1TEX global-load sectors (32 B) ...
    global_ld_requests: float | None = None   # ... and the warp-level requests they served
    local_ld_inst: float | None = None        # spill traffic (LDL warp instructions)
    local_st_inst: float | None = None

    @property
    def global_sectors_per_request(self) -> float | None:
        """How many 32-B sectors each warp-level global load touched: 4 for coalesced 4-byte loads,
        up to 32 when every thread reads its own sector (a stride of 32 floats). None without loads."""
        if self.global_ld_sectors is None or not self.global_ld_requests:
            return None
        return self.global_ld_sectors / self.global_ld_requests

    @property
    def shared_conflict_pct(self) -> float | None:
        """Excess wavefronts over all shared-memory wavefronts, loads and stores pooled: the share of
        shared-memory traffic that conflicts cost. A kernel that streams 67 M conflict-free ldmatrix
        wavefronts and stages its epilogue with a few 2-way stores is not 'conflicted' (per-direction
        rates can say 0 % and 24 %); an unpadded tile read is (87 %). Falls back to the worse
        per-direction rate when the raw counts are missing."""
        counts = (self.ld_bank_conflicts, self.ld_wavefronts, self.st_bank_conflicts, self.st_wavefronts)
        if None not in counts:
            ld_c, ld_w, st_c, st_w = counts
            return 100.0 * (ld_c + st_c) / (ld_w + st_w) if ld_w + st_w else 0.0
        rates = [r for r in (self.ld_bank_conflict_pct, self.st_bank_conflict_pct) if r is not None]
        return max(rates) if rates else None
    grid: str = ""
    block: str = ""
    compute_capability: str = ""
    replay_passes: int | None = None          # ncu replay passes this launch needed
    missing_metrics: list[str] = field(default_factory=list)  # requested but n/a in the report


@dataclass
class ProfileResult:
    status: StageStatus
    reason: str = ""
    duration_s: float = 0.0
    kernels: list[KernelMetrics] = field(default_factory=list)
    report_path: str = ""                 # the .ncu-rep artifact
    ncu_version: str = ""
    log: str = ""
    source: list[KernelSourceProfile] = field(default_factory=list)   # per launch, SourceCounters by line


@dataclass
class Fingerprint:
    gpu_name: str = ""
    compute_capability: str = ""
    sm_count: int | None = None
    driver: str = ""
    cuda: str = ""
    torch: str = ""
    ncu_version: str = ""
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    host: str = ""

    @property
    def gpu_kind(self) -> str:
        return self.gpu_name or NO_GPU


@dataclass
class SideResults:
    """What was measured of one revision (candidate or baseline) on its own."""

    sha: str
    static: StaticResult | None = None
    build: BuildResult | None = None
    correctness: CorrectnessResult | None = None
    profile: ProfileResult | None = None


@dataclass
class JobResult:
    """Everything one job (kernel x GPU kind) measured. Input of `decide()`."""

    kernel: str
    candidate: SideResults
    baseline: SideResults | None = None
    bench: BenchResult | None = None      # joint: candidate vs baseline vs peers, interleaved
    fingerprint: Fingerprint | None = None
    notes: list[str] = field(default_factory=list)
    new_kernel: bool = False              # the baseline revision does not declare this kernel


StageResult = StaticResult | BuildResult | CorrectnessResult | BenchResult | ProfileResult

# The result type of each measuring stage: what its stored JSON decodes into (`gate.domain.codec`).
STAGE_RESULT_TYPES: dict[Stage, type[StageResult]] = {
    Stage.STATIC: StaticResult, Stage.BUILD: BuildResult, Stage.CORRECTNESS: CorrectnessResult,
    Stage.BENCH: BenchResult, Stage.PROFILE: ProfileResult,
}
