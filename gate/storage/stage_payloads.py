"""What a stage row's payload holds: the stage's result less what other columns and rows hold already.

Each figure is stored once (docs/design.md, "Where each figure is stored"): `stored_payload` leaves
out the row's `status`, `reason` and `duration_s` columns and a bench's summary figures per shape
(metric rows, `recording.bench_metrics`); `read_payload` puts them back before the JSON is decoded,
so storage still hands on the whole `<Stage>Result`. A payload stored before migration 0008 that
still holds a figure (the synthetic sample stores its payloads whole) keeps it: what it holds wins.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gate.domain.codec import to_json
from gate.domain.names import Metric, Side, Stage
from gate.domain.results import StageResult

# The summary figures of a timing (a side's or a peer's) that are metric rows, by field name ...
TIMING_FIGURES: dict[str, Metric] = {"median_us": Metric.LATENCY_MEDIAN_US, "p10_us": Metric.LATENCY_P10_US,
                                     "p90_us": Metric.LATENCY_P90_US, "tflops": Metric.TFLOPS}
# ... and a shape's candidate/baseline ratio, one row of series candidate.
RATIO_FIGURE, RATIO_SERIES = Metric.LATENCY_RATIO, Side.CANDIDATE.value
# A job's metric rows: (metric name, `Metric.shape`, series) -> value.
Figures = Mapping[tuple[str, str, str], float]
ROW_FIELDS = ("status", "reason", "duration_s")     # the `StageRecord` columns of the same names


def shape_key(shape: str, dtype: str, several_dtypes: bool) -> str:
    """A timed shape's `Metric.shape`: with several dtypes the label gets a `_<dtype>` suffix to stay unique."""
    return f"{shape}_{dtype}" if several_dtypes else shape


def has_several_dtypes(dtypes: Iterable[str]) -> bool:
    return len(set(dtypes)) > 1


def stored_payload(stage: Stage, result: StageResult) -> dict[str, Any]:
    """`to_json(result)` without the fields its stage row's columns and its job's metric rows hold."""
    payload = to_json(result)
    for name in ROW_FIELDS:
        del payload[name]
    if stage is Stage.BENCH:
        for shape, _key, timings in _timed_shapes(payload):
            del shape["ratio"]
            for _series, timing in timings:
                for name in TIMING_FIGURES:
                    del timing[name]
    return payload


def read_payload(stage: str, payload: dict[str, Any], *, status: str, reason: str | None,
                 duration_s: float | None, figures: Figures) -> dict[str, Any]:
    """The whole result's JSON again: `payload` (unchanged) with its row's columns and its job's
    figures put back where it lacks them. A figure no row holds comes back as None (so a required
    one makes the payload fail to decode, saying which)."""
    out = copy.deepcopy(payload)
    out.setdefault("status", status)
    out.setdefault("reason", reason or "")
    if duration_s is not None:
        out.setdefault("duration_s", duration_s)
    if stage == Stage.BENCH:
        for shape, key, timings in _timed_shapes(out):
            shape.setdefault("ratio", figures.get((RATIO_FIGURE.value, key, RATIO_SERIES)))
            for series, timing in timings:
                for name, metric in TIMING_FIGURES.items():
                    timing.setdefault(name, figures.get((metric.value, key, series)))
    return out


def _timed_shapes(payload: dict[str, Any]) -> Iterator[tuple[dict, str, list[tuple[str, dict]]]]:
    """Each shape of a bench payload with its `Metric.shape` key and its timings by series
    (candidate, baseline when timed, each peer by name), as `recording.bench_metrics` names them."""
    shapes = payload.get("shapes") or []
    several = has_several_dtypes(s["dtype"] for s in shapes)
    for shape in shapes:
        timings = [(Side.CANDIDATE.value, shape["candidate"]), (Side.BASELINE.value, shape.get("baseline")),
                   *sorted((shape.get("peers") or {}).items())]
        yield shape, shape_key(shape["shape"], shape["dtype"], several), [
            (series, timing) for series, timing in timings if timing is not None]
