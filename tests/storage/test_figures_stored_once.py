"""Each figure is stored once (issue 23): a bench's summary figures are metric rows, the bench
stage's payload leaves them out, and the read model still holds the whole `BenchResult`. The one
other place the database keeps a judged figure is the verdict's rule rows, its record of what it
judged (and the verdict's notice, until it is announced): docs/design.md, "Where each figure is
stored". On SQLite and PostgreSQL."""

from __future__ import annotations

import copy

from figures_once import distinct_figures_result, occurrences, places, store_judged
from sqlalchemy import select

from gate.domain.codec import to_json
from gate.domain.names import Side
from gate.storage.models import StageRecord
from gate.storage.queries import Revisions


def _bench_figures(result) -> list[float]:  # noqa: ANN001
    out = []
    for st in result.bench.shapes:
        for timing in (st.candidate, st.baseline, *st.peers.values()):
            if timing is not None:
                out += [f for f in (timing.median_us, timing.p10_us, timing.p90_us, timing.tflops) if f is not None]
        out += [st.ratio] if st.ratio is not None else []
    return out


def test_the_latency_median_is_one_metric_row_and_the_rule_rows_evidence(session_factory, tmp_path):
    result = distinct_figures_result()
    median = result.bench.shapes[0].candidate.median_us
    _, report = store_judged(session_factory, result, tmp_path)
    judged = sum(occurrences(to_json(row), median) for row in report.rules)
    assert judged >= 1                     # the latency row states the median it compared
    with session_factory() as s:
        assert places(s, median) == {"metrics.value": 1, "verdicts.rules": judged, "notices.body": judged}


def test_no_bench_figure_is_kept_in_the_stage_payload(session_factory, tmp_path):
    result = distinct_figures_result()
    store_judged(session_factory, result, tmp_path)
    figures = _bench_figures(result)
    assert len(set(figures)) == len(figures) == 16
    with session_factory() as s:
        for figure in figures:
            found = places(s, figure)
            assert found["metrics.value"] == 1, (figure, found)
            assert "stage_results.payload" not in found, (figure, found)
        # ... nor the columns of its own row (status, reason, duration)
        payloads = s.scalars(select(StageRecord.payload)).all()
    assert payloads and not any({"status", "reason", "duration_s"} & p.keys() for p in payloads)


def test_the_read_model_holds_the_whole_results_again(session_factory, tmp_path):
    result = distinct_figures_result()
    revision_id, _ = store_judged(session_factory, result, tmp_path)
    with session_factory() as s:
        (job,) = Revisions(s).detail(revision_id).jobs
    assert job.bench == result.bench                       # every figure back in place, None where none
    assert job.bench.shapes[1].candidate.tflops is None and job.bench.shapes[1].ratio is None
    assert job.static == result.candidate.static and job.profile(Side.CANDIDATE) == result.candidate.profile
    assert all(stage.unreadable == "" for stage in job.stages)


def test_0008_takes_the_copies_out_of_payloads_stored_before_and_its_downgrade_puts_them_back(
        session_factory, database_url, tmp_path):
    from alembic import command

    from gate.storage.db import make_engine
    from gate.storage.schema import alembic_config, migrating

    result = distinct_figures_result()
    revision_id, _ = store_judged(session_factory, result, tmp_path)
    median = result.bench.shapes[0].candidate.median_us
    engine = make_engine(database_url)
    cfg = alembic_config(database_url)

    def migrate(step, target):  # noqa: ANN001, ANN202
        with engine.connect() as conn, migrating(conn), conn.begin():
            cfg.attributes["connection"] = conn
            step(cfg, target)

    def bench_payload() -> dict:
        with session_factory() as s:
            return s.scalar(select(StageRecord.payload).where(StageRecord.stage == "bench"))

    migrate(command.downgrade, "0007")          # as a gate before 0008 stored it: the payload whole
    whole = bench_payload()
    assert whole["shapes"][0]["candidate"]["median_us"] == median and whole["status"] == "passed"
    assert whole["shapes"][1]["ratio"] is None and whole["shapes"][1]["candidate"]["tflops"] is None
    with session_factory() as s:
        assert places(s, median)["stage_results.payload"] == 1
    migrate(command.upgrade, "head")
    with session_factory() as s:
        assert "stage_results.payload" not in places(s, median)
        (job,) = Revisions(s).detail(revision_id).jobs
    assert "median_us" not in bench_payload()["shapes"][0]["candidate"]
    assert job.bench == result.bench
    engine.dispose()


def test_a_payload_figure_its_row_does_not_hold_stays_and_wins(session_factory, tmp_path):
    """A payload stored before 0008 whose figure no row matches (a row missing, or another value)
    keeps it, and the read model shows the payload's own value."""
    result = distinct_figures_result()
    revision_id, _ = store_judged(session_factory, result, tmp_path)
    with session_factory() as s:
        record = s.scalars(select(StageRecord).where(StageRecord.stage == "bench")).one()
        payload = copy.deepcopy(record.payload)
        payload["shapes"][0]["candidate"]["median_us"] = 49.5
        record.payload = payload
        s.commit()
    with session_factory() as s:
        (job,) = Revisions(s).detail(revision_id).jobs
    assert job.bench.shapes[0].candidate.median_us == 49.5
    assert job.bench.shapes[0].baseline.median_us == result.bench.shapes[0].baseline.median_us
