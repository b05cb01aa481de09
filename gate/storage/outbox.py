"""The transactional outbox: outbound messages stored as `Notification` rows, and every query on them.

The messages notify made of an event (a verdict, queued or cancelled jobs) are stored after the
event's own transaction committed, in the one that takes its notice (`gate.storage.notices`); a
message of no stored event is stored on its own (`store`). A sweeper sends the rows later
(`gate.services.outbox`), with retries.

Each row is claimed with a compare-and-set on (`state`, `next_attempt_at`) that moves
`next_attempt_at` a lease ahead, so two sweepers (threads or processes, SQLite or PostgreSQL) never
send the same row at once; a sender that dies mid-send leaves the row to be retried after the lease.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import event, select, update
from sqlalchemy.orm import Session, SessionTransaction

from gate.domain.notices import Delivery, DeliveryResult, DeliveryState, StoredDelivery
from gate.storage.db import Queries
from gate.storage.models import Notification

_due = threading.Event()     # set when new rows were committed
_WAKE_KEY = "gate.outbox.wake"


def add(session: Session, deliveries: Iterable[Delivery]) -> list[Notification]:
    """Store `deliveries` as pending rows in `session`'s transaction; the sweepers wake on its commit."""
    rows = [Notification(job_id=d.job_id, target=d.target, url=d.url, payload=d.payload) for d in deliveries]
    session.add_all(rows)
    wake_after_commit(session)
    return rows


class Outbox(Queries):
    """The outbox's rows as the sweepers and the webhook route use them (`uow.outbox`); it is the
    `notify.sender.OutboxView` a sender reads."""

    def store(self, deliveries: Iterable[Delivery]) -> list[int]:
        """Store `deliveries` as pending rows and commit (the messages notify made of an event that was
        committed before); their ids. Nothing is written when there are none."""
        rows = add(self._session, deliveries)
        if rows:
            self._session.commit()
        return [row.id for row in rows]

    def due_ids(self, now: datetime, limit: int) -> list[int]:
        """Pending rows whose time has come, oldest first."""
        return list(self._session.scalars(
            select(Notification.id)
            .where(Notification.state == DeliveryState.PENDING, Notification.next_attempt_at <= now)
            .order_by(Notification.id).limit(limit)
        ).all())

    def claim(self, row_id: int, now: datetime, lease_s: float) -> StoredDelivery | None:
        """Take a due row for `lease_s` and commit; None when another sweeper took it first."""
        claimed = self._session.execute(
            update(Notification)
            .where(Notification.id == row_id, Notification.state == DeliveryState.PENDING,
                   Notification.next_attempt_at <= now)
            .values(next_attempt_at=now + timedelta(seconds=lease_s))
        ).rowcount
        self._session.commit()
        if claimed != 1:
            return None
        row = self._session.get(Notification, row_id)
        assert row is not None
        return stored(row)

    def record(self, row_id: int, result: DeliveryResult) -> None:
        """Write what sending did onto the row and commit."""
        row = self._session.get(Notification, row_id)
        assert row is not None
        row.state, row.attempts = result.state.value, result.attempts
        if result.state is not DeliveryState.SUPERSEDED:
            row.last_error = result.last_error
        for name in ("next_attempt_at", "sent_at", "payload"):
            value = getattr(result, name)
            if value is not None:
                setattr(row, name, value)
        self._session.commit()

    def newer_sent(self, row: StoredDelivery) -> list[StoredDelivery]:
        """Rows to the same target and URL, newer than `row`, already sent."""
        return [stored(n) for n in self._session.scalars(
            select(Notification).where(
                Notification.target == row.target, Notification.url == row.url,
                Notification.id > row.id, Notification.state == DeliveryState.SENT,
            )
        )]

    def job_siblings(self, row: StoredDelivery) -> list[StoredDelivery]:
        """The other rows of `row`'s job to the same target, newest first (none without a job)."""
        if row.job_id is None:
            return []
        return [stored(n) for n in self._session.scalars(
            select(Notification).where(
                Notification.job_id == row.job_id,
                Notification.target == row.target,
                Notification.id != row.id,
            ).order_by(Notification.id.desc())
        )]


def wake_after_commit(session: Session) -> None:
    """Wake the sweepers once `session`'s outermost transaction ends (rows are not visible before).

    Not `after_commit` on the session: that also fires when a SAVEPOINT is released, and the
    executor stores a verdict's deliveries inside one (`begin_nested`), before its real commit.
    """
    session.info[_WAKE_KEY] = True


@event.listens_for(Session, "after_transaction_end")
def _wake(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None and session.info.pop(_WAKE_KEY, False):
        _due.set()


def wait_due(timeout_s: float) -> None:
    """Block until rows were committed (or `wake_all`), at most `timeout_s`; then re-arm."""
    _due.wait(timeout_s)
    _due.clear()


def wake_all() -> None:
    _due.set()


def stored(row: Notification) -> StoredDelivery:
    return StoredDelivery(id=row.id, target=row.target, url=row.url, payload=dict(row.payload),
                          job_id=row.job_id, state=DeliveryState(row.state), attempts=row.attempts)
