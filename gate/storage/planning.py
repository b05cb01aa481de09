"""The writes of submitting and planning a revision, each ending in its commit: the service decides,
these store (`gate.services.submissions`).

    store_submission   the repository and a queued revision (or the identical active one)
    record_commit      what git said of the commit, on the revision (not committed: the baseline
                       choice reads it before `queue_jobs`)
    queue_jobs         the baseline and one queued job per kernel, with their events and the
                       notice notify hears of them by
    end_unplanned      a revision that could not be planned ends `done` with the reason
    release            end the read transaction before a long wait (git), holding no connection
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from gate.domain.notices import Notice, NoticeKind
from gate.storage.limits import max_length
from gate.storage.models import Job, JobEvent, JobState, Revision, RevisionStatus
from gate.storage.notices import add_notice
from gate.storage.queries import job_facts
from gate.storage.repositories import ensure_repository
from gate.storage.revisions import add_revision, lock_queued


def store_submission(session: Session, *, url: str, name: str, submission_key: str | None,
                     **values: object) -> tuple[Revision, bool]:
    """The repository at `url` (named `name` when new) and a queued revision of it, committed:
    (it, False); or the identical active revision: (that one, True). See `add_revision`."""
    repository = ensure_repository(session, url, name)
    revision, reused = add_revision(session, repository_id=repository.id, submission_key=submission_key,
                                    **values)
    session.commit()
    return revision, reused


def record_commit(session: Session, revision: Revision, *, sha: str, base_sha: str | None,
                  parent_sha: str | None, author: str | None, message: str | None,
                  committed_at: datetime | None) -> None:
    """The resolved commit and what git says of it; the author cut to its column (git allows any length)."""
    revision.sha, revision.base_sha, revision.parent_sha = sha, base_sha, parent_sha
    revision.author = author[:max_length(Revision.author)] if author else author
    revision.message, revision.committed_at = message, committed_at


def queue_jobs(session: Session, revision: Revision, kernels: list[str], base_sha: str | None) -> Notice | None:
    """One queued job per kernel against `base_sha`, an event each and their notice, committed; the
    notice (None without jobs). The caller holds the revision's row (`lock_queued`)."""
    revision.base_sha = base_sha
    jobs = [Job(revision=revision, kernel=name, state=JobState.QUEUED) for name in kernels]
    session.add_all(jobs)
    session.flush()
    for job in jobs:
        detail = f"{revision.sha[:12]} vs {revision.base_sha or '-'}"
        session.add(JobEvent(job_id=job.id, state="queued", detail=detail))
    notice = add_notice(session, NoticeKind.QUEUED, [job_facts(job) for job in jobs]) if jobs else None
    session.commit()
    return notice


def end_unplanned(session: Session, revision: Revision, message: str) -> bool:
    """End a queued revision as `done` with `message` and commit; False (rolled back, nothing
    written) when it is no longer queued (cancelled meanwhile: it stays cancelled)."""
    if not lock_queued(session, revision.id):
        session.rollback()
        return False
    revision.status, revision.error = RevisionStatus.DONE, message
    session.commit()
    return True


def release(session: Session) -> None:
    """End `session`'s transaction, so that no database connection is held while the planner waits
    on git (issue 12: 45 hung clones exhausted the pool). A commit, not a rollback: the rows read so
    far stay loaded (the sessions do not expire on commit), and nothing is pending here."""
    session.commit()
