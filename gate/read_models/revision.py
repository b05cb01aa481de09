"""One revision as the revision page and `GET /api/v1/revisions/{id}` show it (`gate.storage.queries`
fills it). The stored JSON is decoded once into the domain's own types (`RuleRow`, `BenchResult`, ...):
pages read attributes, so a renamed field fails loudly instead of reading as missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from gate.domain.names import Side, Stage
from gate.domain.results import (
    BenchResult,
    BuildResult,
    CorrectnessResult,
    Fingerprint,
    ProfileResult,
    StageResult,
    StaticResult,
)
from gate.domain.verdict import RuleRow

R = TypeVar("R")


@dataclass
class VerdictDetail:
    verdict: str
    reason: str
    gpu_kind: str
    rules: list[RuleRow]
    fingerprint: Fingerprint | None
    created_at: datetime


@dataclass
class StageDetail:
    side: str
    stage: str
    status: str
    reason: str | None
    duration_s: float | None
    # The stage's stored result, decoded by its stage's type (`STAGE_RESULT_TYPES`); None when none
    # was stored or it no longer decodes (`unreadable` then says why).
    result: StageResult | None
    unreadable: str = ""


@dataclass
class ArtifactDetail:
    id: int
    kind: str
    path: str
    size_bytes: int


@dataclass
class EventDetail:
    state: str
    detail: str | None
    at: datetime


@dataclass
class JobDetail:
    id: int
    kernel: str
    gpu_kind: str
    state: str
    attempts: int
    worker: str | None
    progress: str | None
    error: str | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    verdict: VerdictDetail | None
    stages: list[StageDetail] = field(default_factory=list)
    artifacts: list[ArtifactDetail] = field(default_factory=list)
    events: list[EventDetail] = field(default_factory=list)
    environment: str = ""                    # GPU model | driver | clock policy ("" = unknown)
    # The environment of the baseline revision's own stored job of this kernel (None: none stored):
    # when it differs, the two jobs' absolute figures are not comparable.
    baseline_environment: str | None = None
    reused_from: str = ""                    # `domain.reuse.reused_line` when no child ran ("" = measured)
    gpu_index: int | None = None             # the GPU its slot ran it on: nvidia-smi's index on its host
    gpu_uuid: str | None = None              # and its UUID (None: no GPU, or not claimed yet)

    def stage(self, side: Side, stage: Stage) -> StageDetail | None:
        return next((s for s in self.stages if s.side == side and s.stage == stage), None)

    def _result(self, side: Side, stage: Stage, kind: type[R]) -> R | None:
        found = self.stage(side, stage)
        return found.result if found is not None and isinstance(found.result, kind) else None

    @property
    def bench(self) -> BenchResult | None:
        return self._result(Side.JOINT, Stage.BENCH, BenchResult)

    @property
    def static(self) -> StaticResult | None:
        return self._result(Side.CANDIDATE, Stage.STATIC, StaticResult)

    @property
    def build(self) -> BuildResult | None:
        return self._result(Side.CANDIDATE, Stage.BUILD, BuildResult)

    @property
    def correctness(self) -> CorrectnessResult | None:
        return self._result(Side.CANDIDATE, Stage.CORRECTNESS, CorrectnessResult)

    def profile(self, side: Side) -> ProfileResult | None:
        return self._result(side, Stage.PROFILE, ProfileResult)


@dataclass
class RevisionDetail:
    id: int
    repo: str
    repo_url: str
    sha: str
    branch: str | None
    base_sha: str | None
    parent_sha: str | None
    author: str | None
    message: str | None
    committed_at: datetime | None
    submitted_at: datetime
    status: str
    source: str
    kernels: list[str] | None
    pull_request: int | None
    error: str | None
    verdict: str | None            # worst over the jobs once done; "error" when planning failed
    jobs: list[JobDetail] = field(default_factory=list)


@dataclass(frozen=True)
class RevisionMetric:
    """One stored figure of a revision (the compare page lays two revisions' side by side)."""

    revision_id: int
    kernel: str
    gpu_kind: str
    shape: str
    name: str                      # `gate.domain.names.Metric` value
    series: str
    value: float
    unit: str
    direction: str                 # `gate.domain.names.Direction` value
