"""Revisions: storing a submission once, and the look-ups the planning needs (earlier revisions of
the default branch, unplanned ones)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, selectinload

from gate.errors import StorageError
from gate.storage.inserts import insert_unless_taken
from gate.storage.models import ACTIVE_STATUSES, Job, Revision, RevisionStatus

_TRIES = 3      # a conflict whose revision finished before it was read: insert again


def add_revision(session: Session, *, repository_id: int, submission_key: str | None,
                 **values: Any) -> tuple[Revision, bool]:
    """Store a queued revision (not committed): (it, False). With a `submission_key`, an active
    (queued or running) revision of the repository with the same key is returned instead: (that
    one, True). The partial unique index `uq_revisions_active_submission` decides, so identical
    submissions racing each other store one revision."""
    row = {**values, "repository_id": repository_id, "submission_key": submission_key,
           "status": RevisionStatus.QUEUED.value}
    for _ in range(_TRIES):
        new_id = insert_unless_taken(session, Revision, row)
        if new_id is not None:
            return session.get(Revision, new_id), False
        active = session.scalar(select(Revision).where(
            Revision.repository_id == repository_id, Revision.submission_key == submission_key,
            Revision.status.in_([s.value for s in ACTIVE_STATUSES])))
        if active is not None:
            return active, True
    raise StorageError(f"cannot store a revision of repository {repository_id}: an identical one "
                       "keeps appearing and finishing")


def earlier_default_branch_revisions(session: Session, revision: Revision, limit: int = 50) -> list[Revision]:
    """Finished, planned revisions of the repository's default branch submitted before `revision`
    (other shas), newest first, with their jobs and verdicts loaded."""
    repo = revision.repository
    return list(session.scalars(
        select(Revision)
        .where(Revision.repository_id == repo.id, Revision.branch == repo.default_branch,
               Revision.status == RevisionStatus.DONE, Revision.error.is_(None),
               Revision.id != revision.id, Revision.sha != revision.sha,
               Revision.submitted_at <= revision.submitted_at)
        .order_by(Revision.submitted_at.desc(), Revision.id.desc())
        .options(selectinload(Revision.jobs).selectinload(Job.verdict))
        .limit(limit)
    ))


def unplanned_revision_ids(session: Session) -> list[int]:
    """Revisions left queued without jobs (the server stopped before planning them), oldest first."""
    return list(session.scalars(
        select(Revision.id).where(Revision.status == RevisionStatus.QUEUED, ~Revision.jobs.any())
        .order_by(Revision.id)
    ).all())


def lock_queued(session: Session, revision_id: int) -> bool:
    """Whether the revision is still queued, holding its row until the transaction ends (on
    PostgreSQL a cancel waits for the planner's commit): the planner adds jobs only when True."""
    return session.execute(
        update(Revision).where(Revision.id == revision_id, Revision.status == RevisionStatus.QUEUED)
        .values(status=Revision.status).execution_options(synchronize_session=False)
    ).rowcount == 1
