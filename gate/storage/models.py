"""SQLAlchemy 2.0 models: the gate's history. SQLite (embedded) and PostgreSQL (production).

Jobs are durable rows first: a submitted revision and its jobs are committed before any reply, and a
worker only ever claims a row (state change + attempts) inside a transaction.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, validates

from gate.domain.clock import utcnow
from gate.domain.names import Direction, Side
from gate.domain.notices import DeliveryState


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class JobState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"            # a verdict was stored (any verdict, error included)
    CANCELLED = "cancelled"  # stopped on request: never started, or its child was killed; no verdict


class RevisionStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"  # `POST /api/v1/revisions/{id}/cancel`: final, never `accept`


# A revision in these states is "active": an identical submission returns it (the index below).
ACTIVE_STATUSES = (RevisionStatus.QUEUED, RevisionStatus.RUNNING)
_ACTIVE_WHERE = "status IN (%s)" % ", ".join(f"'{status.value}'" for status in ACTIVE_STATUSES)


def url_key(url: str) -> str:
    """The unique key of a repository's canonical URL: a URL may be longer than PostgreSQL indexes
    (2,704 bytes a B-tree row), its SHA-256 never is."""
    return hashlib.sha256(url.encode()).hexdigest()


class Repository(Base):
    __tablename__ = "repositories"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(300), unique=True)      # "owner/name" or a path's name
    url: Mapped[str] = mapped_column(Text)                            # local path or git URL
    # url_key(url), set with the url: the database keeps one row per place, however requests race.
    url_key: Mapped[str] = mapped_column(String(64))                 # unique: uq_repositories_url_key
    default_branch: Mapped[str] = mapped_column(String(200), default="main")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revisions: Mapped[list[Revision]] = relationship(back_populates="repository")
    __table_args__ = (UniqueConstraint("url_key", name="uq_repositories_url_key"),)

    @validates("url")
    def _keyed(self, _name: str, url: str) -> str:
        self.url_key = url_key(url)
        return url


class Revision(Base):
    __tablename__ = "revisions"
    id: Mapped[int] = mapped_column(primary_key=True)
    repository_id: Mapped[int] = mapped_column(ForeignKey("repositories.id"), index=True)
    sha: Mapped[str] = mapped_column(String(64), index=True)
    branch: Mapped[str | None] = mapped_column(String(200))
    base_sha: Mapped[str | None] = mapped_column(String(64))          # baseline measured against
    parent_sha: Mapped[str | None] = mapped_column(String(64))
    author: Mapped[str | None] = mapped_column(String(300))
    message: Mapped[str | None] = mapped_column(Text)
    committed_at: Mapped[datetime | None] = mapped_column()
    submitted_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    status: Mapped[str] = mapped_column(String(20), default=RevisionStatus.QUEUED)
    # api | webhook | cli | demo | synthetic; indexed: every page's banner asks for a synthetic one
    source: Mapped[str] = mapped_column(String(20), default="api", index=True)
    kernels: Mapped[list[Any] | None] = mapped_column(JSON)           # requested subset, None = all
    pull_request: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)                   # why planning failed (sha, key, path)
    # What makes two submissions identical (`services.submissions.submission_key`); None: never
    # reused (a ref that may move, or `force`). Unique per repository among active revisions.
    submission_key: Mapped[str | None] = mapped_column(String(64))
    remeasure: Mapped[bool] = mapped_column(default=False, server_default=false())   # reuse no earlier figures
    # Where the commit stands in the repository's history, set by planning (`gate.storage.commit_order`
    # orders a kernel's history by it): its first-parent depth (`git rev-list --first-parent --count`),
    # and whether it lies on the first-parent line of the repository's default branch (the line drawn).
    # None: planned before these were kept (the history then falls back to commit time, then id).
    position: Mapped[int | None] = mapped_column(Integer)
    on_branch: Mapped[bool | None] = mapped_column()
    repository: Mapped[Repository] = relationship(back_populates="revisions")
    jobs: Mapped[list[Job]] = relationship(back_populates="revision", order_by="Job.id")
    __table_args__ = (
        Index("uq_revisions_active_submission", "repository_id", "submission_key", unique=True,
              postgresql_where=text(_ACTIVE_WHERE), sqlite_where=text(_ACTIVE_WHERE)),
    )


class Job(Base):
    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    revision_id: Mapped[int] = mapped_column(ForeignKey("revisions.id"), index=True)
    kernel: Mapped[str] = mapped_column(String(200))
    gpu_kind: Mapped[str] = mapped_column(String(100), default="any")  # routing key; "any" = first free
    state: Mapped[str] = mapped_column(String(20), default=JobState.QUEUED, index=True)
    attempts: Mapped[int] = mapped_column(default=0)
    worker: Mapped[str | None] = mapped_column(String(200))
    progress: Mapped[str | None] = mapped_column(Text)                 # last progress line of the child
    error: Mapped[str | None] = mapped_column(Text)
    queued_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column()
    finished_at: Mapped[datetime | None] = mapped_column()
    heartbeat_at: Mapped[datetime | None] = mapped_column()
    # docs/reuse.md: equal keys, equal inputs on the same environment; a job that reused another's
    # figures names the job that measured them (its own key is kept: the lookup skips it).
    reuse_key: Mapped[str | None] = mapped_column(String(64))
    reused_from_job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"))
    # Its candidate side's `side_key`: a later job whose baseline has this key reuses the candidate's
    # profile for its baseline rather than profiling it again (`storage.reuse.find_profile`).
    candidate_key: Mapped[str | None] = mapped_column(String(64))
    # The GPU its worker's slot ran it on (set by the claim): nvidia-smi's index on that host, and
    # its UUID. None: claimed by a worker without a GPU, or before a slot knew its GPU.
    gpu_index: Mapped[int | None] = mapped_column()
    gpu_uuid: Mapped[str | None] = mapped_column(String(64))
    reused_from: Mapped[Job | None] = relationship(remote_side=[id], foreign_keys=[reused_from_job_id])
    revision: Mapped[Revision] = relationship(back_populates="jobs")
    events: Mapped[list[JobEvent]] = relationship(order_by="JobEvent.id")
    stages: Mapped[list[StageRecord]] = relationship(order_by="StageRecord.id")
    verdict: Mapped[VerdictRecord | None] = relationship(back_populates="job")
    artifacts: Mapped[list[Artifact]] = relationship(order_by="Artifact.id")
    # Its figures: the bench's summary figures are read back into its bench payload (`stage_payloads`).
    metrics: Mapped[list[Metric]] = relationship(viewonly=True)
    __table_args__ = (Index("ix_jobs_reuse", "kernel", "reuse_key"),   # `storage.reuse.find_measured`
                      Index("ix_jobs_candidate_key", "kernel", "candidate_key"))   # `storage.reuse.find_profile`


class JobEvent(Base):
    """Every state transition of a job, with its time (queued, claimed, stage started, done...)."""

    __tablename__ = "job_events"
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    state: Mapped[str] = mapped_column(String(40))
    detail: Mapped[str | None] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(default=utcnow)


class StageRecord(Base):
    __tablename__ = "stage_results"
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    side: Mapped[str] = mapped_column(String(20))          # candidate | baseline | joint
    stage: Mapped[str] = mapped_column(String(20))         # `gate.domain.names.Stage`
    status: Mapped[str] = mapped_column(String(20))        # StageStatus
    reason: Mapped[str | None] = mapped_column(Text)
    duration_s: Mapped[float | None] = mapped_column(Float)
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON)   # to_json(<Stage>Result)


class Metric(Base):
    """One figure: revision x kernel x GPU kind x shape x metric (x series: candidate, baseline, peer),
    with the environment it was measured in."""

    __tablename__ = "metrics"
    id: Mapped[int] = mapped_column(primary_key=True)
    revision_id: Mapped[int] = mapped_column(ForeignKey("revisions.id"))
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    kernel: Mapped[str] = mapped_column(String(200))
    gpu_kind: Mapped[str] = mapped_column(String(100))
    shape: Mapped[str] = mapped_column(String(200), default="")
    name: Mapped[str] = mapped_column(String(100))          # latency_median_us, tensor_pipe_pct, ...
    series: Mapped[str] = mapped_column(String(50), default=Side.CANDIDATE.value)  # or baseline, sdpa_flash ...
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(30), default="")
    direction: Mapped[str] = mapped_column(String(10), default=Direction.LOWER.value)   # lower | higher | neither
    # GPU model | driver | clock policy (`gate.domain.environment`): history compares like with like.
    # "" = stored before environments were recorded.
    environment: Mapped[str] = mapped_column(String(300), default="", server_default="")
    __table_args__ = (
        Index("ix_metrics_history", "kernel", "name", "gpu_kind", "shape", "revision_id"),
        # A revision's figures: the revision page (every job's) and the compare page (two revisions').
        Index("ix_metrics_revision", "revision_id"),
        # Covering index of the history pages: one trace is read from the index alone.
        Index("ix_metrics_series", "kernel", "gpu_kind", "name", "series", "shape", "revision_id",
              "value", "environment"),
    )


class VerdictRecord(Base):
    __tablename__ = "verdicts"
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), unique=True)
    revision_id: Mapped[int] = mapped_column(ForeignKey("revisions.id"), index=True)
    kernel: Mapped[str] = mapped_column(String(200))
    gpu_kind: Mapped[str] = mapped_column(String(100))
    verdict: Mapped[str] = mapped_column(String(20))        # Verdict
    reason: Mapped[str] = mapped_column(Text)
    rules: Mapped[list[Any]] = mapped_column(JSON)          # to_json(list[RuleRow])
    fingerprint: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    job: Mapped[Job] = relationship(back_populates="verdict")
    __table_args__ = (
        # A kernel's commit order and verdicts on one GPU kind (history pages, latest verdicts).
        Index("ix_verdicts_kernel", "kernel", "gpu_kind", "revision_id", "verdict"),
    )


class Artifact(Base):
    """A file kept under the data dir: build log, ptxas log, .ncu-rep, the job's result JSON."""

    __tablename__ = "artifacts"
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    kind: Mapped[str] = mapped_column(String(40))
    path: Mapped[str] = mapped_column(Text)                  # relative to GATE_DATA_DIR
    size_bytes: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Notification(Base):
    """An outbound message (commit status, check run, webhook). Stored before sending; retried later."""

    __tablename__ = "notifications"
    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id"), index=True)
    target: Mapped[str] = mapped_column(String(30))          # github_status | check_run | webhook
    url: Mapped[str] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(20), default=DeliveryState.PENDING.value)   # DeliveryState
    attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column()


class NoticeRecord(Base):
    """An event notify must hear of (`gate.domain.notices.Notice`), kept until it is handed (`gate.storage.notices`)."""

    __tablename__ = "notices"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))            # NoticeKind
    body: Mapped[dict[str, Any]] = mapped_column(JSON)       # to_json(Notice) without its id
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookDelivery(Base):
    """`X-GitHub-Delivery` ids already seen: a redelivery creates no second job."""

    __tablename__ = "webhook_deliveries"
    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(100))                 # unique: uq_delivery below
    event: Mapped[str] = mapped_column(String(50))
    revision_id: Mapped[int | None] = mapped_column(ForeignKey("revisions.id"))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    __table_args__ = (UniqueConstraint("delivery_id", name="uq_delivery"),)
