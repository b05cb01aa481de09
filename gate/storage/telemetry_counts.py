"""Counts behind the Prometheus figures (`gate.api.telemetry`), read from the rows at scrape time
(`uow.telemetry`)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import case, func, select

from gate.storage.db import Queries
from gate.storage.models import Job, JobState, Revision, StageRecord, VerdictRecord


class TelemetryCounts(Queries):
    """`uow.telemetry`."""

    def jobs_by_state(self) -> dict[str, int]:
        """Every job state, with none at 0."""
        counts = dict(self._session.execute(select(Job.state, func.count()).group_by(Job.state)).all())
        return {state.value: counts.get(state.value, 0) for state in JobState}

    def revisions_by_status(self) -> list[tuple[str, int]]:
        return [(status, n) for status, n in
                self._session.execute(select(Revision.status, func.count()).group_by(Revision.status))]

    def verdicts_by_verdict(self) -> list[tuple[str, int]]:
        return [(verdict, n) for verdict, n in
                self._session.execute(select(VerdictRecord.verdict, func.count()).group_by(VerdictRecord.verdict))]

    def stage_durations(self, buckets_s: Sequence[float]) -> list[tuple[str, int, float, list[int]]]:
        """Per stage: (stage, results with a duration, their total seconds, cumulative counts at or
        below each bound of `buckets_s`)."""
        d = StageRecord.duration_s
        columns = [func.sum(case((d <= b, 1), else_=0)) for b in buckets_s]
        rows = self._session.execute(
            select(StageRecord.stage, func.count(), func.coalesce(func.sum(d), 0.0), *columns)
            .where(d.is_not(None)).group_by(StageRecord.stage)
        )
        return [(stage, count, total, [int(n or 0) for n in cumulative]) for stage, count, total, *cumulative in rows]
