"""Counts behind the Prometheus figures (`gate.api.telemetry`), read from the rows at scrape time."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from gate.storage.models import Job, Revision, StageRecord, VerdictRecord


def jobs_by_state(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Job.state, func.count()).group_by(Job.state)).all())


def revisions_by_status(session: Session) -> list[tuple[str, int]]:
    return [(status, n) for status, n in
            session.execute(select(Revision.status, func.count()).group_by(Revision.status))]


def verdicts_by_verdict(session: Session) -> list[tuple[str, int]]:
    return [(verdict, n) for verdict, n in
            session.execute(select(VerdictRecord.verdict, func.count()).group_by(VerdictRecord.verdict))]


def stage_durations(session: Session, buckets_s: Sequence[float]) -> list[tuple[str, int, float, list[int]]]:
    """Per stage: (stage, results with a duration, their total seconds, cumulative counts at or
    below each bound of `buckets_s`)."""
    d = StageRecord.duration_s
    columns = [func.sum(case((d <= b, 1), else_=0)) for b in buckets_s]
    rows = session.execute(
        select(StageRecord.stage, func.count(), func.coalesce(func.sum(d), 0.0), *columns)
        .where(d.is_not(None)).group_by(StageRecord.stage)
    )
    return [(stage, count, total, [int(n or 0) for n in cumulative]) for stage, count, total, *cumulative in rows]
