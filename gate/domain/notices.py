"""Values that cross between the notifications and the storage without either importing the other.

The storage stores a `Notice` in the event's own transaction and returns it; only once that
committed does the executor or the service hand it to its `gate.notify.Notifier`, and the deliveries
it gets back go to `gate.storage.outbox` in the transaction that takes (deletes) the notice. An event
rolled back is never announced; one committed but never handed (a crash between the two) is handed
by the sweeper later (`gate.services.announce.announce_due`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from gate.domain.verdict import VerdictReport


class DeliveryState(StrEnum):
    PENDING = "pending"            # waiting for its `next_attempt_at`
    SENT = "sent"                  # delivered; never sent again
    FAILED = "failed"              # refused for good, or out of attempts
    SUPERSEDED = "superseded"      # a newer message for the same place was already sent


@dataclass(frozen=True)
class JobFacts:
    """One job of one revision, as the messages about it name it (read once from its rows by the storage)."""

    job_id: int
    kernel: str
    gpu_kind: str                  # the job's routing key ("any" = first free GPU)
    revision_id: int
    repo: str                      # `Repository.name`: "owner/name" for a GitHub repository
    sha: str
    branch: str | None = None
    base_sha: str | None = None
    pull_request: int | None = None
    fingerprint: dict[str, Any] | None = None   # the stored verdict's fingerprint JSON


@dataclass(frozen=True)
class Delivery:
    """An outbound message a listener made, stored (the outbox) before it is sent."""

    target: str                    # github_status | check_run | webhook
    url: str
    payload: dict[str, Any]
    job_id: int | None = None


@dataclass(frozen=True)
class StoredDelivery:
    """A delivery read back from the outbox: its id and how often it was tried."""

    id: int
    target: str
    url: str
    payload: dict[str, Any]
    job_id: int | None
    state: DeliveryState
    attempts: int


@dataclass(frozen=True)
class DeliveryResult:
    """What sending a stored delivery did, for the storage to record on its row; None leaves a field as it is."""

    state: DeliveryState
    attempts: int
    last_error: str | None = None
    next_attempt_at: datetime | None = None
    sent_at: datetime | None = None
    payload: dict[str, Any] | None = None


class NoticeKind(StrEnum):
    QUEUED = "queued"              # jobs were planned
    VERDICT = "verdict"            # a job's verdict was stored
    CANCELLED = "cancelled"        # jobs were cancelled


@dataclass(frozen=True)
class Notice:
    """An event the storage committed, kept in its `notices` table until notify has heard of it."""

    kind: NoticeKind
    jobs: list[JobFacts]           # a verdict's: its one job, with the stored verdict's fingerprint
    report: VerdictReport | None = None   # a verdict's report itself, not its stored JSON decoded again
    id: int = 0                    # its row
