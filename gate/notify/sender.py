"""Delivers pending `Notification` rows: claim, send with in-call retries, record the outcome.

States of a row:
    pending     waiting for its `next_attempt_at`; a failed try pushes that back (backoff)
    sent        delivered; a sent row is never sent again
    failed      refused for good (a 4xx other than a rate limit), or out of attempts
    superseded  a newer status for the same sha and context was already sent: sending this one
                late would overwrite it (e.g. a deferred `pending` over the final `success`)

Each row is claimed with a compare-and-set on (`state`, `next_attempt_at`) that moves
`next_attempt_at` a lease ahead, so two sweepers (threads or processes, SQLite or PostgreSQL) never
send the same row at once; a sender that dies mid-send leaves the row to be retried after the lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gate.config import Settings
from gate.notify import check_runs, github_status, outbound
from gate.notify.app_auth import AppAuth, load_private_key
from gate.notify.retry import DeliveryError, RetryPolicy
from gate.storage.models import Notification, utcnow

log = logging.getLogger(__name__)

LEASE_S = 300.0             # longer than one row's in-call retries can take
BACKOFF_BASE_S = 30.0       # between sweeps: 30 s, 1 min, 2 min, ... capped below
BACKOFF_MAX_S = 3600.0
MAX_ATTEMPTS = 24           # about a day of tries before a row is marked failed


@dataclass(frozen=True)
class SweepResult:
    sent: int = 0
    deferred: int = 0       # still pending, retried by a later sweep
    failed: int = 0
    superseded: int = 0


class Sender:
    def __init__(self, *, client: httpx.Client, github_token: str | None = None,
                 app_auth: AppAuth | None = None, webhook_secret: str | None = None,
                 policy: RetryPolicy = RetryPolicy(), clock: Callable[[], datetime] = utcnow,
                 backoff_base_s: float = BACKOFF_BASE_S, max_attempts: int = MAX_ATTEMPTS):
        self.client = client
        self.github_token = github_token
        self.app_auth = app_auth
        self.webhook_secret = webhook_secret
        self.policy = policy
        self.clock = clock
        self.backoff_base_s = backoff_base_s
        self.max_attempts = max_attempts

    @classmethod
    def from_settings(cls, settings: Settings, client: httpx.Client | None = None,
                      **kwargs: object) -> Sender:
        client = client or httpx.Client()
        app_auth = None
        if settings.github_app_id and settings.github_app_private_key:
            app_auth = AppAuth(settings.github_app_id, load_private_key(settings.github_app_private_key),
                               settings.github_api_url, client)
        return cls(client=client, github_token=settings.github_token, app_auth=app_auth,
                   webhook_secret=settings.outbound_webhook_secret, **kwargs)  # type: ignore[arg-type]

    def sweep(self, session_factory: Callable[[], Session], limit: int = 100) -> SweepResult:
        """Send every due pending row, oldest first. Safe to run from several places at once."""
        now = self.clock()
        with session_factory() as session:
            due = session.scalars(
                select(Notification.id)
                .where(Notification.state == "pending", Notification.next_attempt_at <= now)
                .order_by(Notification.id).limit(limit)
            ).all()
        counts = {"sent": 0, "deferred": 0, "failed": 0, "superseded": 0}
        for notification_id in due:
            with session_factory() as session:
                outcome = self._claim_and_deliver(session, notification_id, now)
            if outcome:
                counts[outcome] += 1
        return SweepResult(**counts)

    def _claim_and_deliver(self, session: Session, notification_id: int, now: datetime) -> str | None:
        claimed = session.execute(
            update(Notification)
            .where(Notification.id == notification_id, Notification.state == "pending",
                   Notification.next_attempt_at <= now)
            .values(next_attempt_at=now + timedelta(seconds=LEASE_S))
        ).rowcount
        session.commit()
        if claimed != 1:
            return None                   # another sweeper took it
        row = session.get(Notification, notification_id)
        assert row is not None
        outcome = self.deliver(session, row)
        session.commit()
        return outcome

    def deliver(self, session: Session, row: Notification) -> str:
        """Send one claimed row and record the outcome on it (the caller commits)."""
        if _superseded(session, row):
            row.state = "superseded"
            return "superseded"
        row.attempts += 1
        try:
            self._send(session, row)
        except DeliveryError as exc:
            row.last_error = str(exc)[:2000]
            if exc.transient and row.attempts < self.max_attempts:
                row.next_attempt_at = self.clock() + timedelta(seconds=self._backoff_s(row, exc))
                log.warning("notification %s deferred (attempt %s): %s", row.id, row.attempts, exc)
                return "deferred"
            row.state = "failed"
            log.error("notification %s failed for good: %s", row.id, exc)
            return "failed"
        row.state = "sent"
        row.sent_at = self.clock()
        row.last_error = None
        return "sent"

    def _send(self, session: Session, row: Notification) -> None:
        if row.target == github_status.TARGET:
            if not self.github_token:
                raise DeliveryError("GATE_GITHUB_TOKEN is not set", transient=False)
            github_status.send_status(self.client, row, self.github_token, self.policy)
        elif row.target == check_runs.TARGET:
            if self.app_auth is None:
                raise DeliveryError("no GitHub App configured (GATE_GITHUB_APP_ID, key)", transient=False)
            check_runs.send_check_run(session, self.client, row, self.app_auth, self.policy)
        elif row.target == outbound.TARGET:
            outbound.send_webhook(self.client, row, self.webhook_secret, self.policy)
        else:
            raise DeliveryError(f"unknown notification target {row.target!r}", transient=False)

    def _backoff_s(self, row: Notification, exc: DeliveryError) -> float:
        backoff = min(self.backoff_base_s * 2 ** (row.attempts - 1), BACKOFF_MAX_S)
        return max(backoff, exc.retry_after_s or 0.0)


def _superseded(session: Session, row: Notification) -> bool:
    """A commit status whose newer sibling (same sha and context) went out must not be sent.

    Rows are swept oldest first, so in the ordinary case `pending` goes out before the final state.
    """
    if row.target != github_status.TARGET:
        return False
    context = row.payload["body"]["context"]
    newer = session.scalars(
        select(Notification).where(
            Notification.target == row.target, Notification.url == row.url,
            Notification.id > row.id, Notification.state == "sent",
        )
    )
    return any(n.payload["body"]["context"] == context for n in newer)
