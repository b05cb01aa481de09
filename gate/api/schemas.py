"""HTTP shapes: `XIn` validated at the edge (unknown fields refused), `XOut` what the API returns."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

# Revisions and branch names reach git as arguments: no leading "-", no whitespace or control chars.
REV_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_./~^@{}+-]*$"
NAME_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_.+-]*$"


class RevisionIn(BaseModel):
    """A revision to gate."""

    model_config = ConfigDict(extra="forbid")

    repo: str = Field(min_length=1, max_length=2000, pattern=r"^[^-\x00-\x1f][^\x00-\x1f]*$",
                      description="local path or git URL of a repository with gate.toml")
    sha: str = Field(min_length=1, max_length=200, pattern=REV_PATTERN, description="sha or ref")
    branch: str | None = Field(None, max_length=200, pattern=REV_PATTERN)
    base_sha: str | None = Field(None, max_length=200, pattern=REV_PATTERN,
                                 description="baseline; default: last accepted revision, else the parent")
    kernels: list[Annotated[str, Field(pattern=NAME_PATTERN, max_length=200)]] | None = Field(
        None, min_length=1, max_length=200, description="only these kernels of gate.toml (default: all)")

    def kernel_names(self) -> list[str] | None:
        return list(dict.fromkeys(self.kernels)) if self.kernels else None


class RevisionCreatedOut(BaseModel):
    id: int
    status_url: str


class VerdictOut(BaseModel):
    verdict: str
    reason: str
    gpu_kind: str
    rules: list[dict[str, Any]]
    fingerprint: dict[str, Any] | None
    created_at: datetime


class StageOut(BaseModel):
    side: str
    stage: str
    status: str
    reason: str | None
    duration_s: float | None
    payload: dict[str, Any] | None


class ArtifactOut(BaseModel):
    id: int
    kind: str
    path: str
    size_bytes: int
    url: str


class EventOut(BaseModel):
    state: str
    detail: str | None
    at: datetime


class JobOut(BaseModel):
    id: int
    kernel: str
    gpu_kind: str
    state: str
    attempts: int
    worker: str | None
    progress: str | None          # live: the last stage transition of a running job
    error: str | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    verdict: VerdictOut | None
    stages: list[StageOut]
    artifacts: list[ArtifactOut]
    events: list[EventOut]


class RevisionOut(BaseModel):
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
    verdict: str | None
    jobs: list[JobOut]


class HealthOut(BaseModel):
    status: str
    database: str
    executor: str
