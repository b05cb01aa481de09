"""One judged job whose every bench figure is a distinct number, stored the way a worker stores it,
and a count of the places in the database a number appears: what the "each figure stored once"
tests (tests/storage, tests/api) share."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from service_fakes import FakeOutcome, job_result
from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from gate.domain import BenchResult, JobResult, ShapeTiming, StageStatus, TimingSamples, VerdictReport
from gate.domain.manifest import Gates
from gate.storage import claims
from gate.storage.models import Base, Job, Repository, Revision
from gate.storage.outcomes import store_outcome
from gate.verdict.decide import decide


def _timing(median_us: float, p10_us: float, p90_us: float, tflops: float | None) -> TimingSamples:
    """Samples around the figures, none equal to one (a sample is a measurement, not a summary)."""
    samples = [p10_us - 0.5, median_us - 0.25, median_us + 0.25, p90_us + 0.5]
    return TimingSamples(samples, median_us, p10_us, p90_us, tflops)


def distinct_figures_result() -> JobResult:
    """A job timed at two dtypes (so the metric rows' shape keys carry the dtype) with one peer;
    no two figures equal."""
    result = job_result("k0")
    result.bench = BenchResult(status=StageStatus.PASSED, duration_s=12.25, shapes=[
        ShapeTiming("b1_h8_s512_d64", "float16", candidate=_timing(51.234567, 50.111113, 53.777771, 81.123457),
                    baseline=_timing(52.345671, 51.222227, 54.888883, 79.234561),
                    peers={"sdpa_flash": _timing(45.456781, 44.333339, 47.999993, 91.345671)},
                    ratio=0.987654321, ratio_ci_low=0.981, ratio_ci_high=0.994, p_value=0.0123, rounds=40),
        ShapeTiming("b1_h8_s512_d64", "bfloat16", candidate=_timing(61.345679, 60.222221, 63.888887, None)),
    ])
    return result


def store_judged(session_factory, result: JobResult, data_dir: Path) -> tuple[int, VerdictReport]:  # noqa: ANN001
    """`result` judged by `decide` and stored by `store_outcome`; (revision id, the report)."""
    report = decide(result, Gates(max_latency_regression_pct=3.0))
    with session_factory() as s:
        job = Job(revision=Revision(repository=Repository(name="octo/flash", url="https://x/octo/flash.git"),
                                    sha="c" * 40, base_sha="a" * 40), kernel=result.kernel)
        s.add(job)
        s.commit()
        job_id, revision_id = job.id, job.revision_id
        attempt = claims.Claims(s).claim(job_id, worker="w")
    with session_factory() as s:
        store_outcome(s, job_id, attempt, FakeOutcome(result, report), data_dir)
    return revision_id, report


def places(session: Session, value: float) -> Counter:
    """`table.column` -> how many times `value` is stored there, over every table of the schema
    (a number inside JSON counts where it sits; one written into text, as its repr)."""
    found: Counter = Counter()
    present = inspect(session.connection())          # a test may have migrated the schema down
    for table in Base.metadata.sorted_tables:
        names = {c["name"] for c in present.get_columns(table.name)}
        for row in session.execute(select(*(c for c in table.columns if c.name in names))).mappings():
            for column, cell in row.items():
                if n := occurrences(cell, value):
                    found[f"{table.name}.{column}"] += n
    return found


def occurrences(cell: Any, value: float) -> int:
    if isinstance(cell, dict):
        return sum(occurrences(v, value) for v in cell.values())
    if isinstance(cell, list):
        return sum(occurrences(v, value) for v in cell)
    if isinstance(cell, str):
        return cell.count(repr(value))
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        return int(cell == value)
    return 0
