"""Cancelling a revision: its queued and running jobs end `cancelled`, and so does the revision.

One transaction of conditional UPDATEs, taking row locks in the order every other writer does (jobs,
then the revision: the claim, the stored outcome), so a cancel racing a claim or a verdict on
PostgreSQL waits instead of deadlocking:

    1. jobs queued or running  -> cancelled     (a job mid-claim or mid-verdict is waited for)
    2. the revision queued or running -> cancelled; if it is neither, nothing changes
    3. jobs again               -> cancelled     (a planner that committed jobs between 1 and 2)

A queued job is then never claimed (a claim takes `queued` rows only); a running one's worker learns
it at its next heartbeat (the row is no longer its attempt) and kills its child, and a late result is
dropped by the attempt check in `store_outcome`. The planner locks the revision before adding jobs
(`planning.Planning.lock_queued`), so no job is added to a cancelled revision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gate.domain.notices import Notice, NoticeKind
from gate.storage.db import Queries
from gate.storage.notices import add_notice
from gate.storage.models import ACTIVE_STATUSES, Job, JobEvent, JobState, Revision, RevisionStatus, utcnow
from gate.storage.queries import job_facts

CANCELLED_REASON = "cancelled on request"


@dataclass(frozen=True)
class CancelResult:
    status: str | None                                  # the revision's status now; None: no such revision
    cancelled: bool = False                             # this call cancelled it (False: already final)
    job_ids: list[int] = field(default_factory=list)    # jobs this call stopped (queued or running)
    notice: Notice | None = None                        # those jobs' notice, stored with the cancel

    @property
    def finished(self) -> bool:
        """The revision had ended with its verdicts before: too late to cancel."""
        return self.status == RevisionStatus.DONE


def _cancel_jobs(session: Session, revision_id: int) -> list[int]:
    now = utcnow()
    return list(session.scalars(
        update(Job).where(Job.revision_id == revision_id, Job.state.in_([JobState.QUEUED, JobState.RUNNING]))
        .values(state=JobState.CANCELLED, finished_at=now, progress="cancelled", error=CANCELLED_REASON)
        .returning(Job.id).execution_options(synchronize_session=False)
    ).all())


class Cancellation(Queries):
    """`uow.cancellation`."""

    def cancel_revision(self, revision_id: int) -> CancelResult:
        """Cancel revision `revision_id` and commit (see the module doc). Idempotent: a revision already
        cancelled, or done, is left as it is and its status returned with `cancelled=False`. The
        cancelled jobs' notice is stored with the cancel and comes back for the caller to announce."""
        job_ids = _cancel_jobs(self._session, revision_id)
        moved = self._session.execute(
            update(Revision).where(Revision.id == revision_id,
                                         Revision.status.in_([s.value for s in ACTIVE_STATUSES]))
            .values(status=RevisionStatus.CANCELLED).execution_options(synchronize_session=False)
        ).rowcount
        if moved != 1:
            self._session.rollback()
            status = self._session.scalar(select(Revision.status).where(Revision.id == revision_id))
            return CancelResult(status=status)
        job_ids += _cancel_jobs(self._session, revision_id)
        now = utcnow()
        self._session.add_all(JobEvent(job_id=job_id, state=JobState.CANCELLED.value, detail=CANCELLED_REASON,
                                             at=now) for job_id in job_ids)
        facts = [job_facts(job) for job in self._session.scalars(
            select(Job).where(Job.id.in_(job_ids)).order_by(Job.id)).all()] if job_ids else []
        notice = add_notice(self._session, NoticeKind.CANCELLED, facts) if facts else None
        self._session.commit()
        return CancelResult(status=RevisionStatus.CANCELLED.value, cancelled=True, job_ids=sorted(job_ids),
                            notice=notice)
