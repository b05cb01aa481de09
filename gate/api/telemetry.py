"""Prometheus figures read from the database at scrape time, in a registry owned by one app.

Reading the rows (rather than counting in this process) keeps the numbers right when jobs run in
other processes (Celery workers, `gate worker`) and across restarts.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from gate.storage.telemetry_counts import TelemetryCounts
from gate.storage.unit import Store

STAGE_BUCKETS_S = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


class DatabaseCollector:
    def __init__(self, store: Store):
        self.store = store

    def describe(self) -> list[Metric]:
        return []   # names are only known at collect time; skip registry-time collection

    def collect(self) -> Iterator[Metric]:
        with self.store.unit() as uow:
            yield self._jobs(uow.telemetry)
            yield self._revisions(uow.telemetry)
            yield self._verdicts(uow.telemetry)
            yield self._stage_durations(uow.telemetry)

    @staticmethod
    def _jobs(counts: TelemetryCounts) -> Metric:
        g = GaugeMetricFamily("gate_jobs", "Jobs by state", labels=["state"])
        for state, n in counts.jobs_by_state().items():
            g.add_metric([state], n)
        return g

    @staticmethod
    def _revisions(counts: TelemetryCounts) -> Metric:
        g = GaugeMetricFamily("gate_revisions", "Revisions by status", labels=["status"])
        for status, n in counts.revisions_by_status():
            g.add_metric([status], n)
        return g

    @staticmethod
    def _verdicts(counts: TelemetryCounts) -> Metric:
        c = CounterMetricFamily("gate_verdicts", "Verdicts stored, by verdict", labels=["verdict"])
        for verdict, n in counts.verdicts_by_verdict():
            c.add_metric([verdict], n)
        return c

    @staticmethod
    def _stage_durations(counts: TelemetryCounts) -> Metric:
        h = HistogramMetricFamily("gate_stage_duration_seconds", "Stage durations", labels=["stage"])
        for stage, count, total, cumulative in counts.stage_durations(STAGE_BUCKETS_S):
            buckets = [(str(b), n) for b, n in zip(STAGE_BUCKETS_S, cumulative)]
            h.add_metric([stage], buckets + [("+Inf", int(count))], float(total))
        return h


def make_registry(store: Store) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(DatabaseCollector(store))
    return registry
