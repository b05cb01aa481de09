"""Which revision a candidate is timed against."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from gate.storage.models import Job, Revision, RevisionStatus


def last_accepted_sha(session: Session, revision: Revision) -> str | None:
    """The newest earlier revision of the repository's default branch whose every job ended `accept`."""
    repo = revision.repository
    candidates = session.scalars(
        select(Revision)
        .where(Revision.repository_id == repo.id, Revision.branch == repo.default_branch,
               Revision.status == RevisionStatus.DONE, Revision.error.is_(None),
               Revision.id != revision.id, Revision.sha != revision.sha,
               Revision.submitted_at <= revision.submitted_at)
        .order_by(Revision.submitted_at.desc(), Revision.id.desc())
        .options(selectinload(Revision.jobs).selectinload(Job.verdict))
        .limit(50)
    )
    for rev in candidates:
        if rev.jobs and all(j.verdict is not None and j.verdict.verdict == "accept" for j in rev.jobs):
            return rev.sha
    return None


def choose_baseline(session: Session, revision: Revision, *, parent_sha: str | None) -> str | None:
    """`base_sha` when given; else the last fully accepted revision of the default branch; else the parent.

    None only for a root commit with no accepted history: the job then runs without a baseline.
    """
    if revision.base_sha:
        return revision.base_sha
    return last_accepted_sha(session, revision) or parent_sha
