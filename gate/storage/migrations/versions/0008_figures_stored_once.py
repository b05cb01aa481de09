"""Each figure stored once (issue 23): a bench stage's payload leaves out the summary figures its
job's metric rows hold (each timing's median, p10, p90 and TFLOP/s, each shape's ratio), and every
stage payload the fields its own row's columns hold (status, reason, duration).

A payload stored before loses a field only where the row that now holds it has the same value; one
whose row is missing or differs keeps it, and reads as before (`gate.storage.stage_payloads`: what a
payload holds wins). The downgrade puts every field back. No column changes.

The payload layout is written out here as it was at 0008, not imported from the package: a migration
must do later what it did when it was written.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

BATCH = 500
TIMING = {"median_us": "latency_median_us", "p10_us": "latency_p10_us", "p90_us": "latency_p90_us",
          "tflops": "tflops"}
RATIO = ("ratio", "latency_ratio", "candidate")      # ShapeTiming field, metric name, series
ROW_FIELDS = ("status", "reason", "duration_s")

stage_results = sa.table("stage_results", sa.column("id", sa.Integer), sa.column("job_id", sa.Integer),
                         sa.column("stage", sa.String), sa.column("status", sa.String),
                         sa.column("reason", sa.Text), sa.column("duration_s", sa.Float),
                         sa.column("payload", sa.JSON))
metrics = sa.table("metrics", sa.column("job_id", sa.Integer), sa.column("name", sa.String),
                   sa.column("shape", sa.String), sa.column("series", sa.String), sa.column("value", sa.Float))

Figures = dict[tuple[str, str, str], float]
Row = Any          # a stage_results row: .stage, .status, .reason, .duration_s, .payload


def upgrade() -> None:
    _rewrite(op.get_bind(), _strip)


def downgrade() -> None:
    _rewrite(op.get_bind(), _fill)


def _rewrite(bind: sa.Connection, change: Callable[[dict, Row, Figures], bool]) -> None:
    """`change` each stored payload in place, in batches of rows; write back those it changed."""
    after = 0
    while True:
        rows = bind.execute(sa.select(stage_results).where(stage_results.c.id > after)
                            .order_by(stage_results.c.id).limit(BATCH)).all()
        if not rows:
            return
        after = rows[-1].id
        for row in rows:
            payload = row.payload
            if not isinstance(payload, dict):
                continue
            figures = _figures(bind, row.job_id) if row.stage == "bench" else {}
            if change(payload, row, figures):
                bind.execute(sa.update(stage_results).where(stage_results.c.id == row.id)
                             .values(payload=payload))


def _figures(bind: sa.Connection, job_id: int) -> Figures:
    rows = bind.execute(sa.select(metrics.c.name, metrics.c.shape, metrics.c.series, metrics.c.value)
                        .where(metrics.c.job_id == job_id))
    return {(name, shape, series): value for name, shape, series, value in rows}


def _row_values(row: Row) -> dict[str, Any]:
    """What the row's columns say of the fields a payload leaves out (a reason stored as NULL is "")."""
    return {"status": row.status, "reason": row.reason or "", "duration_s": row.duration_s}


def _strip(payload: dict, row: Row, figures: Figures) -> bool:
    """Take out each field whose other holder has the same value; whether any was taken out."""
    places = [(payload, name, value) for name, value in _row_values(row).items()]
    if _is_bench(row):
        places += [(holder, name, figures.get(key)) for holder, name, key in _figure_places(payload)]
    changed = False
    for holder, name, value in places:
        if name not in holder:
            continue
        held = (holder[name] or "") if name == "reason" else holder[name]
        if held == value:
            del holder[name]
            changed = True
    return changed


def _fill(payload: dict, row: Row, figures: Figures) -> bool:
    """Put back each field the payload lacks (a figure no row holds as null); whether any was."""
    places = [(payload, name, value) for name, value in _row_values(row).items() if value is not None]
    if _is_bench(row):
        places += [(holder, name, figures.get(key)) for holder, name, key in _figure_places(payload)]
    missing = [(holder, name, value) for holder, name, value in places if name not in holder]
    for holder, name, value in missing:
        holder[name] = value
    return bool(missing)


def _is_bench(row: Row) -> bool:
    return row.stage == "bench"


def _figure_places(payload: dict) -> list[tuple[dict, str, tuple[str, str, str]]]:
    """(the dict that holds it, field, its metric row's key) of each summary figure of a bench payload."""
    shapes = [s for s in payload.get("shapes") or [] if isinstance(s, dict)]
    several = len({s.get("dtype", "") for s in shapes}) > 1
    out = []
    for shape in shapes:
        key = f"{shape.get('shape', '')}_{shape.get('dtype', '')}" if several else shape.get("shape", "")
        field, metric, series = RATIO
        out.append((shape, field, (metric, key, series)))
        timings = [("candidate", shape.get("candidate")), ("baseline", shape.get("baseline")),
                   *sorted((shape.get("peers") or {}).items())]
        for series, timing in timings:
            if isinstance(timing, dict):
                out += [(timing, field, (metric, key, series)) for field, metric in TIMING.items()]
    return out
