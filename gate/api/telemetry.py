"""Prometheus figures read from the database at scrape time, in a registry owned by one app.

Reading the rows (rather than counting in this process) keeps the numbers right when jobs run in
other processes (Celery workers, `gate worker`) and across restarts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

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
            counts = uow.telemetry
            yield _family(GaugeMetricFamily, "gate_jobs", "Jobs by state", "state", counts.jobs_by_state().items())
            yield _family(GaugeMetricFamily, "gate_revisions", "Revisions by status", "status",
                          counts.revisions_by_status())
            yield _family(CounterMetricFamily, "gate_verdicts", "Verdicts stored, by verdict", "verdict",
                          counts.verdicts_by_verdict())
            yield self._stage_durations(counts)

    @staticmethod
    def _stage_durations(counts: TelemetryCounts) -> Metric:
        h = HistogramMetricFamily("gate_stage_duration_seconds", "Stage durations", labels=["stage"])
        for stage, count, total, cumulative in counts.stage_durations(STAGE_BUCKETS_S):
            buckets = [(str(b), n) for b, n in zip(STAGE_BUCKETS_S, cumulative)]
            h.add_metric([stage], buckets + [("+Inf", int(count))], float(total))
        return h


def _family(kind: type, name: str, documentation: str, label: str,
            counts: Iterable[tuple[str, int]]) -> Metric:
    family = kind(name, documentation, labels=[label])
    for value, n in counts:
        family.add_metric([value], n)
    return family


def make_registry(store: Store) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(DatabaseCollector(store))
    return registry
