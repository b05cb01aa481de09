"""The revision and compare pages read a revision's figures through `ix_metrics_revision`: one range
each, never a scan of every metric row (28.8 M at 100,000 revisions; bench/page_speed.py)."""

from __future__ import annotations

from sqlalchemy import event

from gate.sample import seed_judged_history
from gate.storage.db import make_engine
from gate.storage.schema import upgrade
from gate.storage.unit import Store


def _metric_reads(store: Store, read) -> list[str]:  # noqa: ANN001 (a callable of a unit of work)
    """SQLite's plan of each statement `read` runs that reads `metrics`."""
    statements: list[tuple[str, object]] = []

    def seen(conn, cursor, sql, params, context, executemany):  # noqa: ANN001, PLR0913 (SQLAlchemy's hook)
        if " metrics" in sql and sql.lstrip().upper().startswith("SELECT"):
            statements.append((sql, params))

    event.listen(store.engine, "before_cursor_execute", seen)
    with store.unit() as uow:
        read(uow)
    event.remove(store.engine, "before_cursor_execute", seen)
    with store.engine.connect() as conn:
        return [" / ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params))
                for sql, params in statements]


def _history(tmp_path) -> tuple[Store, int, int]:  # noqa: ANN001
    store = Store(make_engine(f"sqlite:///{tmp_path / 'gate.db'}"))
    upgrade(store.engine)
    with store.unit() as uow:
        seed_judged_history(uow, revisions=6, queue=False)
        newest, parent = uow.revisions.with_sha_prefix("", limit=2)
    return store, parent[0], newest[0]


def test_a_revision_page_reads_its_figures_by_revision_id(tmp_path):
    store, _, newest = _history(tmp_path)
    with store.unit() as uow:
        detail = uow.revisions.detail(newest)
    assert len(detail.jobs) == 4 and all(job.bench is not None for job in detail.jobs)
    # every job's bench payload made whole from its own figures, not another job's
    assert len({job.bench.shapes[0].candidate.median_us for job in detail.jobs}) == 4
    plans = _metric_reads(store, lambda uow: uow.revisions.detail(newest))
    assert plans and all("USING INDEX ix_metrics_revision" in plan for plan in plans), plans
    store.dispose()


def test_the_compare_page_reads_two_revisions_figures_by_revision_id(tmp_path):
    store, parent, newest = _history(tmp_path)
    with store.unit() as uow:
        rows = uow.overview.compared_metrics(parent, newest)
    assert {r.revision_id for r in rows} == {parent, newest}
    plans = _metric_reads(store, lambda uow: uow.overview.compared_metrics(parent, newest))
    assert len(plans) == 1 and "USING INDEX ix_metrics_revision" in plans[0], plans
    store.dispose()
