"""Prometheus figures read from the database at scrape time, in a registry owned by one app.

Reading the rows (rather than counting in this process) keeps the numbers right when jobs run in
other processes (Celery workers, `gate worker`) and across restarts.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from sqlalchemy.orm import Session, sessionmaker

from gate.storage import telemetry_counts
from gate.storage.models import JobState

STAGE_BUCKETS_S = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class DatabaseCollector:
    def __init__(self, session_factory: sessionmaker[Session]):
        self.session_factory = session_factory

    def describe(self) -> list[Metric]:
        return []   # names are only known at collect time; skip registry-time collection

    def collect(self) -> Iterator[Metric]:
        with self.session_factory() as session:
            yield self._jobs(session)
            yield self._revisions(session)
            yield self._verdicts(session)
            yield self._stage_durations(session)

    @staticmethod
    def _jobs(session: Session) -> Metric:
        counts = telemetry_counts.jobs_by_state(session)
        g = GaugeMetricFamily("gate_jobs", "Jobs by state", labels=["state"])
        for state in JobState:
            g.add_metric([state.value], counts.get(state.value, 0))
        return g

    @staticmethod
    def _revisions(session: Session) -> Metric:
        g = GaugeMetricFamily("gate_revisions", "Revisions by status", labels=["status"])
        for status, n in telemetry_counts.revisions_by_status(session):
            g.add_metric([status], n)
        return g

    @staticmethod
    def _verdicts(session: Session) -> Metric:
        c = CounterMetricFamily("gate_verdicts", "Verdicts stored, by verdict", labels=["verdict"])
        for verdict, n in telemetry_counts.verdicts_by_verdict(session):
            c.add_metric([verdict], n)
        return c

    @staticmethod
    def _stage_durations(session: Session) -> Metric:
        h = HistogramMetricFamily("gate_stage_duration_seconds", "Stage durations", labels=["stage"])
        for stage, count, total, cumulative in telemetry_counts.stage_durations(session, STAGE_BUCKETS_S):
            buckets = [(str(b), n) for b, n in zip(STAGE_BUCKETS_S, cumulative)]
            h.add_metric([stage], buckets + [("+Inf", int(count))], float(total))
        return h


def make_registry(session_factory: sessionmaker[Session]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(DatabaseCollector(session_factory))
    return registry
