"""A revision with everything the API and the pages show about it, loaded once (`RevisionDetail`);
the facts and the stored report the notifications need of a job."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from gate.domain.codec import from_json
from gate.domain.notices import JobFacts
from gate.domain.verdict import RuleRow, Verdict, VerdictReport, worst_verdict
from gate.read_models.revision import (
    ArtifactDetail,
    EventDetail,
    JobDetail,
    RevisionDetail,
    StageDetail,
    VerdictDetail,
)
from gate.storage.limits import storable_id
from gate.storage.models import Job, Revision, RevisionStatus


def _job(job: Job) -> JobDetail:
    v = job.verdict
    return JobDetail(
        id=job.id, kernel=job.kernel, gpu_kind=job.gpu_kind, state=job.state, attempts=job.attempts,
        worker=job.worker, progress=job.progress, error=job.error, queued_at=job.queued_at,
        started_at=job.started_at, finished_at=job.finished_at,
        verdict=VerdictDetail(v.verdict, v.reason, v.gpu_kind, v.rules, v.fingerprint, v.created_at) if v else None,
        stages=[StageDetail(s.side, s.stage, s.status, s.reason, s.duration_s, s.payload) for s in job.stages],
        artifacts=[ArtifactDetail(a.id, a.kind, a.path, a.size_bytes) for a in job.artifacts],
        events=[EventDetail(e.state, e.detail, e.at) for e in job.events],
    )


def revision_detail(session: Session, revision_id: int) -> RevisionDetail | None:
    """A revision with its jobs, verdicts, rule tables, stage results, artifacts and events; None if unknown."""
    if not storable_id(revision_id):
        return None
    rev = session.scalar(
        select(Revision).where(Revision.id == revision_id).options(
            selectinload(Revision.repository),
            selectinload(Revision.jobs).selectinload(Job.verdict),
            selectinload(Revision.jobs).selectinload(Job.stages),
            selectinload(Revision.jobs).selectinload(Job.artifacts),
            selectinload(Revision.jobs).selectinload(Job.events),
        ).execution_options(populate_existing=True)
    )
    if rev is None:
        return None
    jobs = [_job(j) for j in rev.jobs]
    verdict = Verdict.ERROR.value if rev.error else None
    if rev.status == RevisionStatus.DONE and not rev.error:
        worst = worst_verdict(j.verdict.verdict for j in jobs if j.verdict)
        verdict = worst.value if worst else None
    return RevisionDetail(
        id=rev.id, repo=rev.repository.name, repo_url=rev.repository.url, sha=rev.sha, branch=rev.branch,
        base_sha=rev.base_sha, parent_sha=rev.parent_sha, author=rev.author, message=rev.message,
        committed_at=rev.committed_at, submitted_at=rev.submitted_at, status=rev.status, source=rev.source,
        kernels=rev.kernels, pull_request=rev.pull_request, error=rev.error, verdict=verdict, jobs=jobs,
    )


def job_facts(job: Job, fingerprint: dict[str, Any] | None = None) -> JobFacts:
    """What the messages about `job` name: its revision and repository, and the fingerprint stored
    with its verdict (given by the caller: a queued job has none, and reading the relationship
    here would cache its absence in the session)."""
    revision = job.revision
    return JobFacts(
        job_id=job.id, kernel=job.kernel, gpu_kind=job.gpu_kind, revision_id=revision.id,
        repo=revision.repository.name, sha=revision.sha, branch=revision.branch,
        base_sha=revision.base_sha, pull_request=revision.pull_request,
        fingerprint=fingerprint,
    )


def stored_report(job: Job) -> VerdictReport:
    """The stored verdict; a job that ended without one reads as `error`, never as passing."""
    record = job.verdict
    if record is None:
        return VerdictReport(Verdict.ERROR, job.error or "the job ended without a verdict")
    rules = from_json(list[RuleRow], record.rules or [], path="rules")
    return VerdictReport(Verdict(record.verdict), record.reason, rules)
