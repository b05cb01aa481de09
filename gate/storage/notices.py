"""Events notify must hear of (`Notice`), stored in the event's own transaction and handed once.

    add_notice   in the event's transaction (not committed): a rolled-back event leaves no notice
    hand_off     after the event committed: mark the notice handed and store the messages notify
                 made of it, in one transaction; False when another process handed it first
    unhanded     notices older than a moment that nobody handed (their process died), oldest first
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gate.domain.clock import utcnow
from gate.domain.codec import from_json, to_json
from gate.domain.notices import Delivery, JobFacts, Notice, NoticeKind
from gate.domain.verdict import VerdictReport
from gate.storage import outbox
from gate.storage.models import NoticeRecord


def add_notice(session: Session, kind: NoticeKind, jobs: Sequence[JobFacts],
               report: VerdictReport | None = None) -> Notice:
    """Store the notice of an event in `session`'s transaction (flushed for its id, not committed)."""
    notice = Notice(kind, list(jobs), report)
    body = to_json(notice)
    del body["id"]
    row = NoticeRecord(kind=kind.value, body=body)
    session.add(row)
    session.flush()
    return Notice(kind, list(jobs), report, row.id)


def hand_off(session: Session, notice_id: int, deliveries: Iterable[Delivery]) -> bool:
    """Mark the notice handed and store `deliveries` in the outbox, then commit; False (rolled back,
    nothing stored) when it was handed already. The conditional UPDATE decides between two
    processes handing one notice (the event's own, and a sweeper recovering it)."""
    taken = session.execute(
        update(NoticeRecord).where(NoticeRecord.id == notice_id, NoticeRecord.handed_at.is_(None))
        .values(handed_at=utcnow()).execution_options(synchronize_session=False)
    ).rowcount
    if taken != 1:
        session.rollback()
        return False
    outbox.add(session, deliveries)
    session.commit()
    return True


def unhanded(session: Session, before: datetime, limit: int = 100) -> list[Notice]:
    """Notices stored before `before` and never handed, oldest first."""
    rows = session.scalars(
        select(NoticeRecord).where(NoticeRecord.handed_at.is_(None), NoticeRecord.created_at < before)
        .order_by(NoticeRecord.id).limit(limit)
    ).all()
    return [from_json(Notice, {**row.body, "id": row.id}, path=f"notice {row.id}") for row in rows]
