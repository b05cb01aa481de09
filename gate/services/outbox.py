"""Sending the outbox: claim each due row in the storage, send it through `gate.notify`, record what
became of it in the storage. The only place that holds both sides of a delivery.

A `Sweeper` daemon thread sweeps every few seconds, and at once after a transaction that stored
deliveries commits (so `pending` reaches GitHub promptly). Each sweep first hands its notifier the
events whose own process died before announcing them (`gate.services.announce.announce_due`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime

from gate.config import Settings
from gate.domain.notices import DeliveryState
from gate.notify import Notifier
from gate.notify.sender import Sender
from gate.services.announce import announce_due
from gate.storage import outbox
from gate.storage.unit import Store, UnitOfWork

log = logging.getLogger(__name__)

SWEEP_INTERVAL_S = 5.0
LEASE_S = 300.0             # longer than one row's in-call retries can take


@dataclass(frozen=True)
class SweepResult:
    sent: int = 0
    deferred: int = 0       # still pending, retried by a later sweep
    failed: int = 0
    superseded: int = 0


_COUNTED = {DeliveryState.SENT: "sent", DeliveryState.PENDING: "deferred", DeliveryState.FAILED: "failed",
            DeliveryState.SUPERSEDED: "superseded"}


def sweep(sender: Sender, store: Store, limit: int = 100) -> SweepResult:
    """Send every due pending row, oldest first. Safe to run from several places at once."""
    now = sender.clock()
    with store.unit() as uow:
        due = uow.outbox.due_ids(now, limit)
    counts = dict.fromkeys(_COUNTED.values(), 0)
    for row_id in due:
        with store.unit() as uow:
            outcome = claim_and_deliver(sender, uow, row_id, now)
        if outcome:
            counts[outcome] += 1
    return SweepResult(**counts)


def claim_and_deliver(sender: Sender, uow: UnitOfWork, row_id: int, now: datetime) -> str | None:
    """Claim one row, send it, record the outcome; None when another sweeper took it first."""
    row = uow.outbox.claim(row_id, now, LEASE_S)
    if row is None:
        return None
    result = sender.deliver(row, uow.outbox)
    uow.outbox.record(row_id, result)
    return _COUNTED[result.state]


class Sweeper:
    """Runs `sweep(sender, store)` until `stop()`, after handing `notifier` the events left
    unannounced; a failed sweep is logged, not fatal."""

    def __init__(self, sender: Sender, store: Store, interval_s: float = SWEEP_INTERVAL_S,
                 notifier: Notifier | None = None):
        self.sender = sender
        self.store = store
        self.interval_s = interval_s
        self.notifier = notifier
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gate-notify-sweeper", daemon=True)

    def start(self) -> Sweeper:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        outbox.wake_all()
        self._thread.join(timeout_s)
        self.sender.client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.notifier is not None:
                    announce_due(self.store, self.notifier)
                sweep(self.sender, self.store)
            except Exception:     # the database may be briefly away; the next sweep retries
                log.exception("notification sweep failed")
            outbox.wait_due(self.interval_s)


def start_sweeper(settings: Settings, store: Store, notifier: Notifier) -> Sweeper:
    """Start the thread that delivers stored notifications (and hands `notifier` the events their
    process left unannounced); call `.stop()` at shutdown."""
    return Sweeper(Sender.from_settings(settings), store, notifier=notifier).start()
