"""The after-commit hand-off: an event the storage has committed goes to the notifier the service
was composed with, and the messages it makes go to the outbox in a transaction of their own.

    announce_queued(session, notifier, jobs)       after the planner committed the jobs
    announce_verdict(session, notifier, notice)    after a verdict was stored (None: it was not)
    announce_cancelled(session, notifier, jobs)    after a cancel committed

An event whose transaction rolled back never reaches here: the storage returns it only once it
committed. A crash between the two commits loses that event's messages (the verdict itself is
kept); the outbox's retries cover every message once it is stored.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.orm import Session

from gate.domain.notices import Delivery, JobFacts, VerdictNotice
from gate.notify import Notifier
from gate.storage import outbox

log = logging.getLogger(__name__)


def announce_queued(session: Session, notifier: Notifier, jobs: Sequence[JobFacts]) -> None:
    if jobs:
        _store(session, notifier.jobs_queued(jobs), f"queued jobs {[j.job_id for j in jobs]}")


def announce_verdict(session: Session, notifier: Notifier, notice: VerdictNotice | None) -> None:
    if notice is not None:
        _store(session, notifier.verdict(notice.job, notice.report), f"the verdict of job {notice.job.job_id}")


def announce_cancelled(session: Session, notifier: Notifier, jobs: Sequence[JobFacts]) -> None:
    if jobs:
        _store(session, notifier.cancelled(jobs), f"cancelled jobs {[j.job_id for j in jobs]}")


def _store(session: Session, deliveries: list[Delivery], what: str) -> None:
    """Into the outbox; a database fault here is logged, not raised: the event it reports stands."""
    try:
        outbox.store(session, deliveries)
    except Exception:
        session.rollback()
        log.exception("the %d messages about %s could not be stored", len(deliveries), what)
