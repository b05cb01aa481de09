"""Ending a job: its verdict, stage results, metrics and artifacts in one transaction, exactly once.

The final UPDATE is conditional on the attempt that was claimed: if the job was re-queued and claimed
again meanwhile (its worker was presumed dead), this late result is dropped instead of stored twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from gate.domain import JobResult, Verdict, VerdictReport
from gate.domain.codec import to_json
from gate.domain.notices import Delivery, JobFacts
from gate.domain.reuse import Provenance
from gate.storage import artifacts as artifact_files
from gate.storage import outbox
from gate.storage.models import Job, JobEvent, JobState, Revision, RevisionStatus, utcnow
from gate.storage.queries import job_facts
from gate.storage.recording import extract_metrics, stage_records, verdict_record

log = logging.getLogger(__name__)


class Outcome(Protocol):
    """What `gate.executors.job.gate_job` returns (`GateOutcome`)."""

    result: JobResult
    report: VerdictReport
    artifacts: list[tuple[str, Path]]
    reuse_key: str
    reused_from: Provenance | None


# What to tell the world about a stored verdict (the executor passes the notifications' `on_verdict`):
# the deliveries it returns are stored with the verdict.
Notices = Callable[[JobFacts, VerdictReport], Sequence[Delivery]]


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


def _close(session: Session, job: Job, report: VerdictReport, fingerprint: dict | None,
           notices: Notices | None) -> None:
    session.flush()
    open_jobs = session.scalar(
        select(func.count()).select_from(Job).where(Job.revision_id == job.revision_id, Job.state != JobState.DONE)
    )
    if open_jobs == 0:
        session.execute(update(Revision).where(Revision.id == job.revision_id).values(status=RevisionStatus.DONE))
    try:
        with session.begin_nested():   # a failing listener must not lose the verdict
            if notices is not None:
                outbox.add(session, notices(job_facts(job, fingerprint), report))
    except Exception:
        log.exception("job %s: a notification listener failed; the verdict is kept", job.id)
    session.commit()


def store_outcome(session: Session, job_id: int, attempt: int, outcome: Outcome, data_dir: Path,
                  notices: Notices | None = None) -> bool:
    """Store a finished job, and the deliveries `notices` makes of it, in one transaction.
    False: the job is no longer this attempt's (nothing was written)."""
    report, result = outcome.report, outcome.result
    job = _finish(session, job_id, attempt, str(report.verdict), None)
    if job is None:
        return False
    gpu_kind = result.fingerprint.gpu_kind if result.fingerprint else job.gpu_kind
    record = verdict_record(report, result, kernel=job.kernel, gpu_kind=gpu_kind)
    record.job_id, record.revision_id = job.id, job.revision_id
    session.add(record)
    job.reuse_key = outcome.reuse_key or None
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
        if Path(path).is_file():
            session.add(artifact_files.keep(data_dir, job.id, kind, Path(path)))
    _close(session, job, report, record.fingerprint, notices)
    return True


def store_error(session: Session, job_id: int, attempt: int, message: str,
                notices: Notices | None = None) -> bool:
    """End a job as `error` (the gate failed, not the kernel). Never `accept`."""
    job = _finish(session, job_id, attempt, str(Verdict.ERROR), message)
    if job is None:
        return False
    report = VerdictReport(verdict=Verdict.ERROR, reason=message)
    record = verdict_record(report, None, kernel=job.kernel, gpu_kind=job.gpu_kind)
    record.job_id, record.revision_id = job.id, job.revision_id
    session.add(record)
    _close(session, job, report, record.fingerprint, notices)
    return True
