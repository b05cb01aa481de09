"""Events notify must hear of (`Notice`), stored in the event's own transaction and handed once.

A rolled-back event leaves no notice. Once the event committed, `hand_off` takes its notice (the row
goes) and stores the messages notify made of it in one transaction; `unhanded` finds the notices
whose process died first. A notice lives only until it is handed, so the table holds what is pending
and no second copy of a verdict's figures stays behind (the verdict itself is in `verdicts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gate.domain.codec import from_json, to_json
from gate.domain.notices import Delivery, JobFacts, Notice, NoticeKind
from gate.domain.verdict import VerdictReport
from gate.storage import outbox
from gate.storage.db import Queries
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


class Notices(Queries):
    """The notices of committed events, handed once (`uow.notices`)."""

    def hand_off(self, notice_id: int, deliveries: Iterable[Delivery]) -> bool:
        """Take the notice and store `deliveries` in the outbox, then commit; False (rolled back, nothing
        stored) when it was taken already. The DELETE decides between two processes handing one notice
        (the event's own, and a sweeper recovering it): on PostgreSQL the second waits for the first's
        commit and then finds no row."""
        taken = self._session.execute(
            delete(NoticeRecord).where(NoticeRecord.id == notice_id).execution_options(synchronize_session=False)
        ).rowcount
        if taken != 1:
            self._session.rollback()
            return False
        outbox.add(self._session, deliveries)
        self._session.commit()
        return True

    def unhanded(self, before: datetime, limit: int = 100) -> list[Notice]:
        """Notices stored before `before` and never handed, oldest first."""
        rows = self._session.scalars(
            select(NoticeRecord).where(NoticeRecord.created_at < before)
            .order_by(NoticeRecord.id).limit(limit)
        ).all()
        return [from_json(Notice, {**row.body, "id": row.id}, path=f"notice {row.id}") for row in rows]
