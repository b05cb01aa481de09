"""A revision with everything the API and the pages show about it, loaded once (`RevisionDetail`,
`uow.revisions`); the facts and the stored report the notifications need of a job."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from gate.domain.codec import from_json
from gate.domain.environment import stored_environment
from gate.domain.names import Side, Stage
from gate.domain.notices import JobFacts
from gate.domain.results import STAGE_RESULT_TYPES, Fingerprint, StageResult
from gate.domain.reuse import reused_line
from gate.domain.verdict import RuleRow, Verdict, VerdictReport, worst_verdict
from gate.read_models.revision import (
    ArtifactDetail,
    EventDetail,
    JobDetail,
    RevisionDetail,
    StageDetail,
    VerdictDetail,
)
from gate.storage.db import Queries
from gate.storage.limits import storable_id
from gate.storage.models import Job, Metric, Revision, RevisionStatus, StageRecord, VerdictRecord
from gate.storage.stage_payloads import Figures, read_payload

log = logging.getLogger(__name__)


def _environment(job: Job) -> str:
    """The environment key of a stored job: its verdict's fingerprint and its bench's clock policy."""
    bench = next((s.payload for s in job.stages if s.side == Side.JOINT and s.stage == Stage.BENCH), None)
    return stored_environment(job.verdict.fingerprint if job.verdict else None, bench)


def _baseline_environments(session: Session, rev: Revision) -> dict[str, str]:
    """kernel -> environment of the newest judged job of the baseline revision (same repository,
    sha = base_sha); kernels it has no judged job for are absent."""
    if not rev.base_sha:
        return {}
    jobs = session.scalars(
        select(Job).join(Revision).where(Revision.repository_id == rev.repository_id,
                                          Revision.sha == rev.base_sha, Job.verdict.has())
        .options(selectinload(Job.verdict), selectinload(Job.stages)).order_by(Job.id)).all()
    return {j.kernel: _environment(j) for j in jobs}


def stored_rules(record: VerdictRecord) -> list[RuleRow]:
    """A stored verdict's rule table, decoded (a row that does not fit `RuleRow` raises ValueError)."""
    return from_json(list[RuleRow], record.rules or [], path="rules")


def _verdict(v: VerdictRecord) -> VerdictDetail:
    fingerprint = from_json(Fingerprint, v.fingerprint, path="fingerprint") if v.fingerprint else None
    return VerdictDetail(v.verdict, v.reason, v.gpu_kind, stored_rules(v), fingerprint, v.created_at)


def _stage(s: StageRecord, figures: Figures) -> StageDetail:
    """A stage row with its payload made whole again (`stage_payloads.read_payload`: the row's columns,
    the job's metric rows) and decoded by the stage's result type. A payload that no longer fits
    (stored by an older gate) reads as no result, with the reason, rather than failing the page."""
    kind = STAGE_RESULT_TYPES.get(s.stage)
    result: StageResult | None = None
    unreadable = ""
    if kind is not None and s.payload is not None:
        try:
            whole = read_payload(s.stage, s.payload, status=s.status, reason=s.reason,
                                 duration_s=s.duration_s, figures=figures)
            result = from_json(kind, whole, path=f"{s.side} {s.stage}")
        except (TypeError, ValueError, KeyError) as exc:     # TypeError, KeyError: a required field is missing
            unreadable = f"{s.side} {s.stage}: {exc}"
            log.warning("stage result %s of job %s does not decode: %s", s.id, s.job_id, exc)
    return StageDetail(s.side, s.stage, s.status, s.reason, s.duration_s, result, unreadable)


def _figures(session: Session, revision_id: int) -> dict[int, dict[tuple[str, str, str], float]]:
    """job id -> its figures, for every job of a revision: one range of `ix_metrics_revision` (a
    job's figures carry its revision's id), not one read per job nor a scan by job id."""
    out: dict[int, dict[tuple[str, str, str], float]] = {}
    for job_id, name, shape, series, value in session.execute(
            select(Metric.job_id, Metric.name, Metric.shape, Metric.series, Metric.value)
            .where(Metric.revision_id == revision_id)):
        out.setdefault(job_id, {})[(name, shape, series)] = value
    return out


def _job(job: Job, figures: Figures, baseline_environment: str | None = None) -> JobDetail:
    v = job.verdict
    return JobDetail(
        id=job.id, kernel=job.kernel, gpu_kind=job.gpu_kind, state=job.state, attempts=job.attempts,
        worker=job.worker, progress=job.progress, error=job.error, queued_at=job.queued_at,
        started_at=job.started_at, finished_at=job.finished_at,
        verdict=_verdict(v) if v else None,
        stages=[_stage(s, figures) for s in job.stages],
        artifacts=[ArtifactDetail(a.id, a.kind, a.path, a.size_bytes) for a in job.artifacts],
        events=[EventDetail(e.state, e.detail, e.at) for e in job.events],
        environment=_environment(job) if v else "", baseline_environment=baseline_environment,
        reused_from=_reused_from(job), gpu_index=job.gpu_index, gpu_uuid=job.gpu_uuid,
    )


def _reused_from(job: Job) -> str:
    origin = job.reused_from
    if origin is None or origin.finished_at is None:
        return ""
    return reused_line(origin.revision.sha, origin.id, origin.finished_at.isoformat())


class Revisions(Queries):
    """Revisions as the pages and the JSON API read them, and the references people type (`uow.revisions`)."""

    def detail(self, revision_id: int) -> RevisionDetail | None:
        """A revision with its jobs, verdicts, rule tables, stage results, artifacts and events; None if unknown."""
        if not storable_id(revision_id):
            return None
        rev = self._session.scalar(
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
        baseline_envs = _baseline_environments(self._session, rev)
        figures = _figures(self._session, rev.id)
        jobs = [_job(j, figures.get(j.id, {}), baseline_envs.get(j.kernel)) for j in rev.jobs]
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

    def exists(self, revision_id: int) -> bool:
        return self._session.get(Revision, revision_id) is not None

    def with_sha_prefix(self, prefix: str, limit: int = 10) -> list[tuple[int, str]]:
        """(id, sha) of the revisions whose sha starts with `prefix` (lowercase hex), newest first."""
        rows = self._session.execute(
            select(Revision.id, Revision.sha).where(Revision.sha.startswith(prefix.lower(), autoescape=True))
            .order_by(Revision.id.desc()).limit(limit))
        return [(rev_id, sha) for rev_id, sha in rows]

    def newest_on_branch(self, branch: str) -> int | None:
        """The id of the newest revision submitted on `branch` (any repository), or None."""
        return self._session.scalar(select(Revision.id).where(Revision.branch == branch)
                                          .order_by(Revision.id.desc()).limit(1))


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
    return VerdictReport(Verdict(record.verdict), record.reason, stored_rules(record))
