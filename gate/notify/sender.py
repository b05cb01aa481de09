"""Sends one stored delivery (a row, as a value) with in-call retries and returns what became of it.

States of a row (`DeliveryState`):
    pending     waiting for its `next_attempt_at`; a failed try pushes that back (backoff)
    sent        delivered; a sent row is never sent again
    failed      refused for good (a 4xx other than a rate limit), or out of attempts
    superseded  a newer status for the same sha and context was already sent: sending this one
                late would overwrite it (e.g. a deferred `pending` over the final `success`)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx

from gate.config import Settings
from gate.domain.clock import utcnow
from gate.domain.notices import DeliveryResult, DeliveryState, StoredDelivery
from gate.notify import check_runs, github_status, outbound
from gate.notify.app_auth import AppAuth, load_private_key
from gate.notify.retry import DeliveryError, RetryPolicy

log = logging.getLogger(__name__)

BACKOFF_BASE_S = 30.0       # between sweeps: 30 s, 1 min, 2 min, ... capped below
BACKOFF_MAX_S = 3600.0
MAX_ATTEMPTS = 24           # about a day of tries before a row is marked failed


class OutboxView(Protocol):
    """What deciding about one row may read of the others (the sweep answers from the outbox)."""

    def newer_sent(self, row: StoredDelivery) -> Sequence[StoredDelivery]:
        """Rows to the same target and URL, newer than `row`, already sent."""

    def job_siblings(self, row: StoredDelivery) -> Sequence[StoredDelivery]:
        """The other rows of `row`'s job to the same target, newest first."""


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

    def deliver(self, row: StoredDelivery, outbox: OutboxView) -> DeliveryResult:
        """Send one claimed row; the result is what to record on it."""
        if row.target == github_status.TARGET and github_status.superseded(row, outbox.newer_sent(row)):
            return DeliveryResult(DeliveryState.SUPERSEDED, row.attempts)
        attempts = row.attempts + 1
        try:
            payload = self._send(row, outbox)
        except DeliveryError as exc:
            error = str(exc)[:2000]
            if exc.transient and attempts < self.max_attempts:
                log.warning("notification %s deferred (attempt %s): %s", row.id, attempts, exc)
                return DeliveryResult(DeliveryState.PENDING, attempts, last_error=error,
                                      next_attempt_at=self.clock() + timedelta(
                                          seconds=self._backoff_s(attempts, exc)))
            log.error("notification %s failed for good: %s", row.id, exc)
            return DeliveryResult(DeliveryState.FAILED, attempts, last_error=error)
        return DeliveryResult(DeliveryState.SENT, attempts, sent_at=self.clock(), payload=payload)

    def _send(self, row: StoredDelivery, outbox: OutboxView) -> dict[str, Any] | None:
        if row.target == github_status.TARGET:
            if not self.github_token:
                raise DeliveryError("GATE_GITHUB_TOKEN is not set", transient=False)
            github_status.send_status(self.client, row, self.github_token, self.policy)
        elif row.target == check_runs.TARGET:
            if self.app_auth is None:
                raise DeliveryError("no GitHub App configured (GATE_GITHUB_APP_ID, key)", transient=False)
            return check_runs.send_check_run(self.client, row, self.app_auth, self.policy,
                                             lambda: outbox.job_siblings(row))
        elif row.target == outbound.TARGET:
            outbound.send_webhook(self.client, row, self.webhook_secret, self.policy)
        else:
            raise DeliveryError(f"unknown notification target {row.target!r}", transient=False)
        return None

    def _backoff_s(self, attempts: int, exc: DeliveryError) -> float:
        backoff = min(self.backoff_base_s * 2 ** (attempts - 1), BACKOFF_MAX_S)
        return max(backoff, exc.retry_after_s or 0.0)
