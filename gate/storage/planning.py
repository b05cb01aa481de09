"""Submitting and planning a revision, as the storage sees it (`uow.planning`): the service decides
(`gate.services.submissions`), these read and store.

Where the planner waits on git it ends the read transaction with the unit's `commit`, so that no
database connection is held meanwhile (issue 12: 45 hung clones exhausted the pool).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, selectinload

from gate.domain.notices import Notice, NoticeKind
from gate.errors import StorageError
from gate.storage.db import Queries
from gate.storage.inserts import insert_unless_taken
from gate.storage.limits import max_length
from gate.storage.models import ACTIVE_STATUSES, Job, JobEvent, JobState, Repository, Revision, RevisionStatus
from gate.storage.notices import add_notice
from gate.storage.queries import job_facts
from gate.storage.repositories import ensure_repository

_TRIES = 3      # a conflict whose revision finished before it was read: insert again


@dataclass(frozen=True)
class RevisionToPlan:
    id: int
    repo_url: str
    sha: str                      # as submitted until planned: a ref or a short sha may be given
    base_sha: str | None
    kernels: list[str] | None     # the subset asked for; None = every kernel of gate.toml
    status: str                   # `RevisionStatus`
    error: str | None
    job_ids: list[int]
    drawn_branch: str = "main"    # the repository's default branch: the line its history draws
    # Submitted as a pull request's head or for another branch than `drawn_branch`: drawn apart,
    # whatever git says of the commit.
    elsewhere: bool = False

    @property
    def plannable(self) -> bool:
        """Queued without jobs: not planned yet, not cancelled."""
        return self.status == RevisionStatus.QUEUED and not self.job_ids


@dataclass(frozen=True)
class EarlierRevision:
    sha: str
    verdicts: list[str | None]    # one per job; None where a job has no verdict


class Planning(Queries):
    """`uow.planning`."""

    def store_submission(self, *, url: str, name: str, submission_key: str | None,
                         **values: object) -> tuple[int, bool]:
        """The repository at `url` (named `name` when new) and a queued revision of it, committed:
        (its id, False); or the identical active revision: (its id, True). See `_add_revision`."""
        repository = ensure_repository(self._session, url, name)
        found = _add_revision(self._session, repository_id=repository.id, submission_key=submission_key, **values)
        self._session.commit()
        return found

    def to_plan(self, revision_id: int) -> RevisionToPlan | None:
        """The revision as it is now in the database (never a copy the session held); None if unknown."""
        row = self._session.execute(
            select(Revision.id, Repository.url, Revision.sha, Revision.base_sha, Revision.kernels,
                   Revision.status, Revision.error, Repository.default_branch, Revision.branch,
                   Revision.pull_request)
            .join(Repository, Repository.id == Revision.repository_id).where(Revision.id == revision_id)).first()
        if row is None:
            return None
        *fields, drawn, branch, pull_request = row
        jobs = self._session.scalars(select(Job.id).where(Job.revision_id == revision_id).order_by(Job.id))
        elsewhere = pull_request is not None or (branch is not None and branch != drawn)
        return RevisionToPlan(*fields, job_ids=list(jobs), drawn_branch=drawn, elsewhere=elsewhere)

    def lock_queued(self, revision_id: int) -> bool:
        """Whether the revision is still queued, holding its row until the transaction ends (on
        PostgreSQL a cancel waits for the planner's commit): the planner adds jobs only when True."""
        return self._session.execute(
            update(Revision).where(Revision.id == revision_id, Revision.status == RevisionStatus.QUEUED)
            .values(status=Revision.status).execution_options(synchronize_session=False)
        ).rowcount == 1

    def record_commit(self, revision_id: int, *, sha: str, base_sha: str | None, parent_sha: str | None,
                      author: str | None, message: str | None, committed_at: datetime | None,
                      position: int | None = None, on_branch: bool | None = None) -> None:
        """The resolved commit and what git says of it, its place in the history among them (first-
        parent depth, on the drawn branch or not); the author cut to its column (git allows any length).
        Not committed: the baseline choice reads it before `queue_jobs`."""
        revision = self._session.get(Revision, revision_id)
        revision.sha, revision.base_sha, revision.parent_sha = sha, base_sha, parent_sha
        revision.author = author[:max_length(Revision.author)] if author else author
        revision.message, revision.committed_at = message, committed_at
        revision.position, revision.on_branch = position, on_branch

    def default_branch_before(self, revision_id: int, limit: int = 50) -> list[EarlierRevision]:
        """Finished, planned revisions of the repository's default branch submitted before this one
        (other shas), newest first, each with its jobs' verdicts."""
        revision = self._session.get(Revision, revision_id)
        repo = revision.repository
        earlier = self._session.scalars(
            select(Revision)
            .where(Revision.repository_id == repo.id, Revision.branch == repo.default_branch,
                   Revision.status == RevisionStatus.DONE, Revision.error.is_(None),
                   Revision.id != revision.id, Revision.sha != revision.sha,
                   Revision.submitted_at <= revision.submitted_at)
            .order_by(Revision.submitted_at.desc(), Revision.id.desc())
            .options(selectinload(Revision.jobs).selectinload(Job.verdict))
            .limit(limit))
        return [EarlierRevision(rev.sha, [job.verdict.verdict if job.verdict else None for job in rev.jobs])
                for rev in earlier]

    def queue_jobs(self, revision_id: int, kernels: list[str],
                   base_sha: str | None) -> tuple[list[int], Notice | None]:
        """One queued job per kernel against `base_sha`, an event each and their notice, committed:
        the jobs' ids and the notice (None without jobs). The caller holds the revision's row
        (`lock_queued`)."""
        revision = self._session.get(Revision, revision_id)
        revision.base_sha = base_sha
        jobs = [Job(revision=revision, kernel=name, state=JobState.QUEUED) for name in kernels]
        self._session.add_all(jobs)
        self._session.flush()
        for job in jobs:
            detail = f"{revision.sha[:12]} vs {revision.base_sha or '-'}"
            self._session.add(JobEvent(job_id=job.id, state="queued", detail=detail))
        notice = add_notice(self._session, NoticeKind.QUEUED, [job_facts(job) for job in jobs]) if jobs else None
        self._session.commit()
        return [job.id for job in jobs], notice

    def end_unplanned(self, revision_id: int, message: str) -> bool:
        """End a queued revision as `done` with `message` and commit; False (rolled back, nothing
        written) when it is no longer queued (cancelled meanwhile: it stays cancelled)."""
        if not self.lock_queued(revision_id):
            self._session.rollback()
            return False
        self._session.execute(update(Revision).where(Revision.id == revision_id)
                              .values(status=RevisionStatus.DONE, error=message))
        self._session.commit()
        return True

    def unplanned_ids(self) -> list[int]:
        """Revisions left queued without jobs (the server stopped before planning them), oldest first."""
        return list(self._session.scalars(
            select(Revision.id).where(Revision.status == RevisionStatus.QUEUED, ~Revision.jobs.any())
            .order_by(Revision.id)
        ).all())


def _add_revision(session: Session, *, repository_id: int, submission_key: str | None,
                  **values: Any) -> tuple[int, bool]:
    """Store a queued revision (not committed): (its id, False). With a `submission_key`, an active
    (queued or running) revision of the repository with the same key is returned instead: (its id,
    True). The partial unique index `uq_revisions_active_submission` decides, so identical
    submissions racing each other store one revision."""
    row = {**values, "repository_id": repository_id, "submission_key": submission_key,
           "status": RevisionStatus.QUEUED.value}
    for _ in range(_TRIES):
        new_id = insert_unless_taken(session, Revision, row)
        if new_id is not None:
            return new_id, False
        active = session.scalar(select(Revision.id).where(
            Revision.repository_id == repository_id, Revision.submission_key == submission_key,
            Revision.status.in_([s.value for s in ACTIVE_STATUSES])))
        if active is not None:
            return active, True
    raise StorageError(f"cannot store a revision of repository {repository_id}: an identical one "
                       "keeps appearing and finishing")

