"""Aggregating the profiled launches of one shape (a kernel may launch more than once per call,
e.g. a split-K pass and its combine). Pure; shared by the verdict rules and the stored history."""

from __future__ import annotations

from gate.domain.names import Direction, Metric
from gate.domain.results import KernelMetrics


def by_shape(kernels: list[KernelMetrics]) -> dict[str, list[KernelMetrics]]:
    grouped: dict[str, list[KernelMetrics]] = {}
    for k in kernels:
        grouped.setdefault(k.shape, []).append(k)
    return grouped


def weighted(kernels: list[KernelMetrics], metric: str) -> float | None:
    """Duration-weighted mean of a %-of-peak metric over a shape's launches (plain mean without durations)."""
    pairs = [(getattr(k, metric), k.duration_ns) for k in kernels if getattr(k, metric) is not None]
    if not pairs:
        return None
    if all(d for _, d in pairs):
        return sum(v * d for v, d in pairs) / sum(d for _, d in pairs)
    return sum(v for v, _ in pairs) / len(pairs)


def shape_figure(kernels: list[KernelMetrics], metric: Metric) -> float | None:
    """The one figure of `metric` for a shape's launches, as the rules judge it and the history stores it."""
    if not metric.info.worst_launch:
        return weighted(kernels, metric)
    values = [v for v in (getattr(k, metric) for k in kernels) if v is not None]
    if not values:
        return None
    return max(values) if metric.direction is Direction.LOWER else min(values)
