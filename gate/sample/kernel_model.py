"""What the synthetic gate remembers of a kernel, and what it says of one job (SYNTHETIC SAMPLE DATA)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from gate.sample.kernels import KernelKind


@dataclass
class Outcome:
    verdict: str
    reason: str
    rules: list[Any]
    fingerprint: dict[str, Any]
    metrics: list[dict[str, Any]] = field(default_factory=list)
    stages: list[tuple[str, str, str, str, dict[str, Any]]] = field(default_factory=list)


class KernelModel:
    """The accepted state of one kernel on one GPU; `judging.judge_commit` gates a commit against it."""

    def __init__(self, name: str, kind: KernelKind, rng: random.Random, with_stages: bool = True):
        self.name = name
        self.kind = kind
        self.with_stages = with_stages
        self.rng = rng
        self.level = dict(kind.latency_us)
        self.tensor_pipe_pct = kind.tensor_pipe_pct
        self.conflict_pct = 4.2 if kind.tensor_pipe_pct and kind.workload == "attention" else 0.3
        self.registers = kind.registers
        self.static_figures: dict[int, list[dict[str, Any]]] = {}   # registers -> `judging`'s static rows

    def noisy(self, value: float, rel: float = 0.01) -> float:
        return value * (1.0 + self.rng.gauss(0.0, rel))
