"""The synthetic measurements behind `gate.sample.seed` (SYNTHETIC SAMPLE DATA, nothing measured).

Latency levels follow a story of commits; each job's numbers are that level with ~1 % noise, the
way an interleaved benchmark reports them. Rule tables use the gate's own `RuleRow` type.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from gate.domain import RuleOutcome, RuleRow, Verdict
from gate.domain.codec import to_json

SHAPES = {
    "attention": ["b1_h8_s512_d64", "b4_h16_s4096_d64_causal"],
    "gemm": ["m2048_n2048_k1024", "m4096_n4096_k4096"],
}
FLOPS = {   # forward FLOPs: attention 4*b*h*s^2*d (halved when causal), gemm 2*m*n*k
    "b1_h8_s512_d64": 4 * 1 * 8 * 512**2 * 64,
    "b4_h16_s4096_d64_causal": 4 * 4 * 16 * 4096**2 * 64 // 2,
    "m2048_n2048_k1024": 2 * 2048 * 2048 * 1024,
    "m4096_n4096_k4096": 2 * 4096**3,
}


@dataclass(frozen=True)
class KernelKind:
    workload: str
    latency_us: dict[str, float]           # H100 start level per shape
    peers_us: dict[str, dict[str, float]]  # shape -> peer -> H100 level
    tensor_pipe_pct: float
    registers: int
    smem_bytes: int
    gates: dict[str, float]


KERNELS: dict[str, KernelKind] = {
    "flashcore_scalar": KernelKind(
        "attention", {"b1_h8_s512_d64": 310.0, "b4_h16_s4096_d64_causal": 41_000.0},
        {}, 0.0, 72, 16_384, {"max_latency_regression_pct": 3, "max_spill_bytes": 0}),
    "flashcore_wmma": KernelKind(
        "attention", {"b1_h8_s512_d64": 58.0, "b4_h16_s4096_d64_causal": 2_350.0},
        {"b1_h8_s512_d64": {"sdpa_flash": 31.0, "sdpa_cudnn": 27.5, "sdpa_efficient": 38.0},
         "b4_h16_s4096_d64_causal": {"sdpa_flash": 1_290.0, "sdpa_cudnn": 1_140.0,
                                     "sdpa_efficient": 1_720.0}},
        34.0, 96, 32_768,
        {"max_latency_regression_pct": 3, "min_tensor_pipe_pct": 25, "max_bank_conflict_pct": 5,
         "min_warps_active_pct": 20, "max_registers": 128, "max_spill_bytes": 0}),
    "gemm_tiled": KernelKind(
        "gemm", {"m2048_n2048_k1024": 21.0, "m4096_n4096_k4096": 198.0},
        {"m2048_n2048_k1024": {"cublas": 13.5}, "m4096_n4096_k4096": {"cublas": 151.0}},
        52.0, 128, 49_152,
        {"max_latency_regression_pct": 3, "min_tensor_pipe_pct": 40, "max_registers": 168}),
}
PEERS_ON_A100 = {"sdpa_flash", "sdpa_efficient", "cublas"}   # cuDNN SDPA needs sm_90 here
A100_SLOWDOWN = 1.85

MESSAGES = [
    "Unroll the inner KV loop by two", "Keep the running max in registers across tiles",
    "Use exp2f with a pre-scaled softmax", "Vectorise Q loads to 128-bit", "Tidy launch bounds",
    "Swap the order of the rescale and the PV product", "Move the causal mask out of the hot loop",
    "Pad the shared-memory row stride", "Hoist the 1/sqrt(d) scale into Q", "Split the epilogue",
    "Reuse the P tile buffer for the output accumulator", "Fuse the final normalisation",
]
AUTHORS = ["Ada Okafor", "Lin Wei", "Mei Tanaka", "Sam Rivera"]


@dataclass(frozen=True)
class StoryEvent:
    kind: str          # normal | ldmatrix | regress | conflicts | inconclusive | noprofile
    target: str        # the kernel the commit changes ("" = none in particular)
    message: str
    author: str


def revision_story(n: int, rng: random.Random) -> list[StoryEvent]:
    """Commit events: one ldmatrix step at the middle, a handful of regressions, rare others."""
    special = {n // 2: ("ldmatrix", "flashcore_wmma",
                        "Load K/V tiles with ldmatrix.x4 and a swizzled shared-memory layout"),
               int(n * 0.28): ("inconclusive", "flashcore_wmma", "Reorder the softmax reductions"),
               int(n * 0.75): ("conflicts", "flashcore_wmma",
                               "Store O through shared memory without the padding"),
               int(n * 0.92): ("noprofile", "flashcore_wmma", "Bump the profiler container")}
    for frac, target in ((0.2, "flashcore_wmma"), (0.37, "gemm_tiled"), (0.62, "flashcore_wmma"),
                         (0.85, "flashcore_scalar")):
        special.setdefault(int(n * frac), ("regress", target, "Try 4 warps per block instead of 8"))
    events = []
    for i in range(n):
        author = AUTHORS[rng.randrange(len(AUTHORS))]
        if i in special:
            kind, target, message = special[i]
        elif n > 200 and rng.random() < 0.03:
            kind, target, message = "regress", "flashcore_wmma", "Experiment: larger Br tile"
        else:
            kind, target, message = "normal", "", MESSAGES[rng.randrange(len(MESSAGES))]
        events.append(StoryEvent(kind, target, message, author))
    return events


@dataclass
class Outcome:
    verdict: str
    reason: str
    rules: list[Any]
    fingerprint: dict[str, Any]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    stages: list[tuple[str, str, str, str, dict[str, Any]]] = field(default_factory=list)


class KernelModel:
    """The accepted state of one kernel; `measure` gates one commit against it."""

    def __init__(self, name: str, kind: KernelKind, rng: random.Random, with_stages: bool = True):
        self.name = name
        self.kind = kind
        self.with_stages = with_stages
        self.rng = rng
        self.level = dict(kind.latency_us)
        self.tensor_pipe_pct = kind.tensor_pipe_pct
        self.conflict_pct = 4.2 if kind.tensor_pipe_pct and kind.workload == "attention" else 0.3
        self.registers = kind.registers

    def measure(self, event: StoryEvent, gpu: str, sha: str) -> Outcome:
        from gate.sample.judging import gate_commit   # keeps this module about the numbers
        return gate_commit(self, event, gpu, sha)

    def noisy(self, value: float, rel: float = 0.01) -> float:
        return value * (1.0 + self.rng.gauss(0.0, rel))


def rule(name: str, outcome: RuleOutcome, reason: str, **kw: Any) -> Any:
    return to_json(RuleRow(rule=name, outcome=outcome, reason=reason, **kw))


def verdict_of(rules: list[Any], profiled: bool) -> tuple[str, str]:
    """The verdict the gate's rules give: any fail rejects, then inconclusive, then incomplete."""
    for outcome, verdict in ((RuleOutcome.FAIL, Verdict.REJECT),
                             (RuleOutcome.INCONCLUSIVE, Verdict.INCONCLUSIVE),
                             (RuleOutcome.NOT_RUN, Verdict.INCOMPLETE)):
        hits = [r for r in rules if r["outcome"] == outcome]
        if hits:
            return verdict.value, hits[0]["reason"]
    assert profiled
    return Verdict.ACCEPT.value, "every rule passed"
