"""Ending a job: its verdict, stage results, metrics and artifacts in one transaction, exactly once.

The final UPDATE is conditional on the attempt that was claimed: if the job was re-queued and claimed
again meanwhile (its worker was presumed dead), this late result is dropped instead of stored twice.
The verdict's `Notice` is stored in the same transaction and returned; the caller hands it to its
notifier once committed (`gate.executors.base`): nothing of the notifications runs here.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Protocol

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from gate.domain import JobResult, Verdict, VerdictReport
from gate.domain.codec import to_json
from gate.domain.notices import Notice, NoticeKind
from gate.returned_files import Refused
from gate.domain.reuse import Provenance
from gate.storage import artifacts as artifact_files
from gate.storage.db import Queries
from gate.storage.notices import add_notice
from gate.storage.models import Job, JobEvent, JobState, Revision, RevisionStatus, utcnow
from gate.storage.queries import job_facts
from gate.storage.recording import extract_metrics, stage_records, verdict_record

log = logging.getLogger(__name__)


class Outcome(Protocol):
    """What `gate.executors.job.gate_job` returns (`GateOutcome`; the tests' fakes have the same fields)."""

    result: JobResult
    report: VerdictReport
    artifacts: list[tuple[str, Path]]
    reuse_key: str
    candidate_key: str
    reused_from: Provenance | None


def _finish(session: Session, job_id: int, attempt: int, verdict: str, error: str | None) -> Job | None:
    now = utcnow()
    done = session.execute(
        update(Job).where(Job.id == job_id, Job.state == JobState.RUNNING, Job.attempts == attempt)
        .values(state=JobState.DONE, finished_at=now, heartbeat_at=now, error=error, progress=f"done: {verdict}")
        .execution_options(synchronize_session=False)
    )
    if done.rowcount != 1:
        session.rollback()
        log.warning("job %s attempt %s: result dropped, the job was re-queued or cancelled meanwhile",
                    job_id, attempt)
        return None
    session.add(JobEvent(job_id=job_id, state=JobState.DONE.value, detail=verdict if not error else f"{verdict}: {error}", at=now))
    return session.get(Job, job_id, populate_existing=True)


def _close(session: Session, job: Job, report: VerdictReport, fingerprint: dict | None) -> Notice:
    """End the revision when this was its last open job, store the verdict's notice, and commit."""
    session.flush()
    open_jobs = session.scalar(
        select(func.count()).select_from(Job).where(Job.revision_id == job.revision_id, Job.state != JobState.DONE)
    )
    if open_jobs == 0:
        session.execute(update(Revision).where(Revision.id == job.revision_id).values(status=RevisionStatus.DONE))
    notice = add_notice(session, NoticeKind.VERDICT, [job_facts(job, fingerprint)], report)
    session.commit()
    return notice


def store_outcome(session: Session, job_id: int, attempt: int, outcome: Outcome,
                  data_dir: Path) -> Notice | None:
    """Store a finished job in one transaction and commit; the verdict as the notifications hear of
    it. None: the job is no longer this attempt's (nothing was written)."""
    report, result = outcome.report, outcome.result
    job = _finish(session, job_id, attempt, str(report.verdict), None)
    if job is None:
        return None
    gpu_kind = result.fingerprint.gpu_kind if result.fingerprint else job.gpu_kind
    record = verdict_record(report, result, kernel=job.kernel, gpu_kind=gpu_kind)
    record.job_id, record.revision_id = job.id, job.revision_id
    session.add(record)
    job.reuse_key = outcome.reuse_key or None
    job.candidate_key = outcome.candidate_key or None
    job.reused_from_job_id = outcome.reused_from.job_id if outcome.reused_from else None
    for row in stage_records(result):
        row.job_id = job.id
        session.add(row)
    for metric in extract_metrics(result):
        metric.revision_id, metric.job_id, metric.kernel, metric.gpu_kind = job.revision_id, job.id, job.kernel, gpu_kind
        session.add(metric)
    session.add(artifact_files.write_text(data_dir, job.id, "result", "result.json",
                                          json.dumps({"result": to_json(result), "verdict": to_json(report)}, indent=1)))
    for kind, path in outcome.artifacts:
        try:
            session.add(artifact_files.keep(data_dir, job.id, kind, Path(path)))
        except Refused as exc:     # gone, or no longer a plain file: never stored
            log.warning("job %s: %s", job.id, exc)
    return _close(session, job, report, record.fingerprint)


def store_error(session: Session, job_id: int, attempt: int, message: str) -> Notice | None:
    """End a job as `error` (the gate failed, not the kernel) and commit. Never `accept`. None: the
    job is no longer this attempt's."""
    job = _finish(session, job_id, attempt, str(Verdict.ERROR), message)
    if job is None:
        return None
    report = VerdictReport(verdict=Verdict.ERROR, reason=message)
    record = verdict_record(report, None, kernel=job.kernel, gpu_kind=job.gpu_kind)
    record.job_id, record.revision_id = job.id, job.revision_id
    session.add(record)
    return _close(session, job, report, record.fingerprint)


class Outcomes(Queries):
    """The executors' group of a unit of work (`uow.group(Outcomes)`): a job's end, committed."""

    def store(self, job_id: int, attempt: int, outcome: Outcome, data_dir: Path) -> Notice | None:
        return store_outcome(self._session, job_id, attempt, outcome, data_dir)

    def error(self, job_id: int, attempt: int, message: str) -> Notice | None:
        return store_error(self._session, job_id, attempt, message)
