"""What the parent hands the GPU child for one job (kernel x revision pair), as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gate.domain.manifest import KernelSpec
from gate.domain.names import Side
from gate.domain.results import JobResult
from gate.domain.reuse import Provenance
from gate.domain.verdict import VerdictReport


@dataclass
class Checkout:
    sha: str
    path: str                      # an isolated workspace holding the tree at `sha`


@dataclass
class RunOptions:
    gpu_stages: bool = True        # False: correctness/bench/profile are NOT_RUN ("disabled")
    profile: bool = True
    bench_budget_s: float = 20.0   # per shape: interleaved rounds stop here at the latest
    target_rel_se_pct: float = 0.5 # ... or as soon as the median's relative standard error is this
    max_reruns: int = 2            # extra bench attempts when the interval straddles the threshold
    correctness_seeds: int = 3
    nvcc_path: str = "nvcc"
    ncu_path: str = "ncu"
    ncu_clock_control: str = "base"   # identical for both sides; "none" where clocks must stay untouched
    clock_policy: str = "observe"     # bench: `ClockPolicy`: observe and normalise, or lock where permitted
    build_cache_dir: str = ""      # content-addressed object cache shared by jobs
    pch_dir: str = ""              # precompiled torch headers (compiling/torch_pch.py), read-only in the box; "": none
    reuse_max_age_h: float = 168.0 # an earlier job's figures stand for unchanged inputs this long; 0: never
    stage_timeout_s: float = 300.0
    compile_workers: int = 0       # compiles at once in one job; 0: half the cores (compile_pool.compile_workers)

    @property
    def pch_path(self) -> Path | None:
        """`pch_dir` as a path (the precompiled headers and torch's saved facts); None: none."""
        return Path(self.pch_dir) if self.pch_dir else None


def method_key(shape: str, dtype: str) -> str:
    """The key of `JobRequest.kept_methods`: one (shape label, dtype) of a kernel."""
    return f"{shape}/{dtype}"


def methods_agree(result: JobResult, kept_methods: dict[str, str]) -> bool:
    """Whether an earlier result timed every shape with the method the history now keeps for it.
    The kept methods are not part of the reuse key: a kernel's first job has none and hands its own
    choice to every later one, so hashing them kept the jobs of a steady history from ever reusing
    that first job (ten kernels, one changed: all ten measured, on the H200). The figures are
    interchangeable exactly when the methods agree, which is what this checks."""
    shapes = result.bench.shapes if result.bench is not None else []
    return all(kept_methods.get(method_key(st.shape, st.dtype), st.method) == st.method for st in shapes)


@dataclass(frozen=True)
class JobOrder:
    """One kernel of one revision to gate, as the executor reads it from storage (`gate run` makes
    one from its arguments): the input of `gate.executors.job.gate_job`."""

    repo: str                      # URL or path, as the mirror fetches it
    sha: str                       # the candidate, a full sha
    base_sha: str | None           # its baseline; None: a root commit
    kernel: str
    gpu_kind: str = "any"          # the job's routing key
    remeasure: bool = False        # measure even when the history holds the same inputs' figures
    # `JobRequest.kept_methods` from this kernel's history on this GPU kind (`storage.timing_methods`)
    kept_methods: dict[str, str] = field(default_factory=dict)
    repository_id: int | None = None   # the history's repository (reuse lookups); None: `gate run`


@dataclass
class JobRequest:
    kernel: KernelSpec
    candidate: Checkout
    artifacts_dir: str
    baseline: Checkout | None = None
    options: RunOptions = field(default_factory=RunOptions)
    # Profile the baseline too (a second ncu session, about 6 s on an H200): `executors.plan.request_for`
    # asks for it whenever there is a baseline, for the relative ncu rules and the source-line diff.
    profile_baseline: bool = False
    # The timing method ("graph" or "events") this kernel's history used per `method_key`, in this
    # environment: the child keeps it, so one history never mixes methods (issue 25). Empty: the
    # first job chooses.
    kept_methods: dict[str, str] = field(default_factory=dict)
    # The baseline as its own manifest builds it (`manifest.built_as`); None: as `kernel` (no baseline,
    # or one whose manifest does not load).
    baseline_kernel: KernelSpec | None = None

    def spec(self, side: str) -> KernelSpec:
        """The kernel as `side` is built: the baseline from its own commit's manifest."""
        return self.baseline_kernel if side == Side.BASELINE and self.baseline_kernel is not None else self.kernel


# The `running` detail said right before the child imports a built extension. Unlike a compile's
# "k.cu: compiled in 3 s" (a step done), it names a step under way: a crash after it (a static
# initialiser that aborts) is charged to that step by the parent (`executors.child`).
LOADING_MODULE = "loading the built module"
# The `running` details of the bench around its CUDA graph captures: a child that dies while capturing
# died of the gate's choice of method, and runs again timed with events (`executors.job.died_capturing`).
CAPTURING_GRAPHS = "capturing CUDA graphs"
TIMING = "timing"


@dataclass
class ProgressEvent:
    """One line the child prints while it works (also the live progress of a running job)."""

    stage: str
    side: str = "candidate"        # candidate | baseline | joint
    state: str = "started"         # started | running (a step inside it) | passed | failed | not_run | error
    detail: str = ""


@dataclass
class GateOutcome:
    """What gating one kernel at one revision produced, on the parent side (`gate.executors.job.gate_job`)."""

    result: JobResult
    report: VerdictReport
    artifacts: list[tuple[str, str]] = field(default_factory=list)  # (kind, path): ptxas_log, ncu_report, ...
    reuse_key: str = ""                    # `gate.executors.reuse_key`; "" when no GPU was seen
    candidate_key: str = ""                # the candidate side's `side_key`: its profile may stand for a later baseline
    reused_from: Provenance | None = None  # set when no child ran: the job whose figures these are
