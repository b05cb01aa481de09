"""Revision look-ups the planning needs: earlier revisions of the default branch, unplanned ones."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from gate.storage.models import Job, Revision, RevisionStatus


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
