"""One revision as the revision page and `GET /api/v1/revisions/{id}` show it (`gate.storage.queries`
fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class VerdictDetail:
    verdict: str
    reason: str
    gpu_kind: str
    rules: list[dict[str, Any]]
    fingerprint: dict[str, Any] | None
    created_at: datetime


@dataclass
class StageDetail:
    side: str
    stage: str
    status: str
    reason: str | None
    duration_s: float | None
    payload: dict[str, Any] | None


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
