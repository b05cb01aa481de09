"""Read queries behind the dashboards: overview, queue, recent revisions, a kernel's metric history.

All reads, no writes. History stays cheap at 10,000 revisions: rows are read through the metrics
indexes (`ix_metrics_series` covers kernel, gpu kind, name, shape, series, revision and value, so
SQLite answers from the index alone), and when a kernel has more than `max_points` revisions the
database aggregates them into equal revision-id buckets (mean, min, max, count) instead of shipping
every point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Row, bindparam, func, literal, select
from sqlalchemy.orm import Session

from gate.storage.models import Job, JobState, Metric, Revision, VerdictRecord

MAX_POINTS = 2000
# Worst first: a bucket of revisions shows the worst verdict any of them got.
VERDICT_SEVERITY = {"error": 0, "reject": 1, "inconclusive": 2, "incomplete": 3, "accept": 4}


@dataclass(frozen=True)
class LatestVerdict:
    gpu_kind: str
    verdict: str
    reason: str
    revision_id: int
    sha: str
    at: datetime


@dataclass(frozen=True)
class KernelSummary:
    name: str
    latest: list[LatestVerdict]          # one per GPU kind, newest revision first
    revisions: int                       # revisions with a verdict for this kernel (any GPU)


@dataclass(frozen=True)
class QueueEntry:
    job_id: int
    revision_id: int
    sha: str
    kernel: str
    gpu_kind: str
    state: str
    progress: str
    worker: str
    queued_at: datetime
    started_at: datetime | None


@dataclass(frozen=True)
class RevisionRow:
    id: int
    sha: str
    branch: str
    message: str
    author: str
    submitted_at: datetime
    status: str
    verdicts: list[tuple[str, str, str]]   # (kernel, gpu_kind, verdict)


@dataclass(frozen=True)
class HistoryPoint:
    x: int                      # commit order: position of the (last) revision in the kernel's list
    revision_id: int            # the revision a click opens (a bucket's newest)
    value: float                # the value, or a bucket's mean
    low: float                  # = value for single points; a bucket's minimum
    high: float
    count: int                  # revisions behind this point (1 unless aggregated)
    sha: str
    committed_at: datetime | None
    message: str
    verdict: str                # "" when none stored; a bucket's worst


@dataclass
class SeriesHistory:
    name: str                   # metric name, e.g. latency_median_us
    shape: str
    series: str                 # candidate, sdpa_flash, sm_90a, ...
    unit: str
    points: list[HistoryPoint] = field(default_factory=list)


@dataclass
class KernelHistory:
    kernel: str
    gpu_kind: str
    revisions: int              # revisions with a verdict on this GPU kind
    bucket_revisions: int       # 1 = every revision is a point
    series: list[SeriesHistory]


def kernel_overview(session: Session) -> list[KernelSummary]:
    """Every kernel with its latest verdict per GPU kind."""
    latest_ids = (
        select(func.max(VerdictRecord.id))
        .group_by(VerdictRecord.kernel, VerdictRecord.gpu_kind)
        .scalar_subquery()
    )
    rows = session.execute(
        select(VerdictRecord.kernel, VerdictRecord.gpu_kind, VerdictRecord.verdict,
               VerdictRecord.reason, VerdictRecord.revision_id, Revision.sha,
               VerdictRecord.created_at)
        .join(Revision, Revision.id == VerdictRecord.revision_id)
        .where(VerdictRecord.id.in_(latest_ids))
        .order_by(VerdictRecord.kernel, VerdictRecord.revision_id.desc())
    ).all()
    counts = dict(session.execute(
        select(VerdictRecord.kernel, func.count(func.distinct(VerdictRecord.revision_id)))
        .group_by(VerdictRecord.kernel)
    ).all())
    by_kernel: dict[str, list[LatestVerdict]] = {}
    for kernel, gpu, verdict, reason, rev_id, sha, at in rows:
        by_kernel.setdefault(kernel, []).append(LatestVerdict(gpu, verdict, reason, rev_id, sha, at))
    return [KernelSummary(k, v, counts.get(k, 0)) for k, v in sorted(by_kernel.items())]


def queue(session: Session) -> list[QueueEntry]:
    """Running jobs first, then waiting ones, oldest first."""
    rows = session.execute(
        select(Job.id, Job.revision_id, Revision.sha, Job.kernel, Job.gpu_kind, Job.state,
               Job.progress, Job.worker, Job.queued_at, Job.started_at)
        .join(Revision, Revision.id == Job.revision_id)
        .where(Job.state.in_([JobState.RUNNING, JobState.QUEUED]))
        .order_by((Job.state == JobState.QUEUED), Job.queued_at, Job.id)
    ).all()
    return [QueueEntry(r[0], r[1], r[2], r[3], r[4], r[5], r[6] or "", r[7] or "", r[8], r[9])
            for r in rows]


def recent_revisions(session: Session, limit: int = 15) -> list[RevisionRow]:
    """The newest submitted revisions with the verdict of each of their jobs."""
    revs = session.execute(
        select(Revision.id, Revision.sha, Revision.branch, Revision.message, Revision.author,
               Revision.submitted_at, Revision.status)
        .order_by(Revision.id.desc()).limit(limit)
    ).all()
    ids = [r[0] for r in revs]
    verdicts: dict[int, list[tuple[str, str, str]]] = {i: [] for i in ids}
    if ids:
        for rev_id, kernel, gpu, verdict in session.execute(
            select(VerdictRecord.revision_id, VerdictRecord.kernel, VerdictRecord.gpu_kind,
                   VerdictRecord.verdict)
            .where(VerdictRecord.revision_id.in_(ids)).order_by(VerdictRecord.kernel)
        ):
            verdicts[rev_id].append((kernel, gpu, verdict))
    return [RevisionRow(r[0], r[1], r[2] or "", (r[3] or "").split("\n", 1)[0], r[4] or "",
                        r[5], r[6], verdicts[r[0]]) for r in revs]


def kernel_gpu_kinds(session: Session, kernel: str) -> list[str]:
    """GPU kinds this kernel has verdicts on, most recently used first."""
    rows = session.execute(
        select(VerdictRecord.gpu_kind, func.max(VerdictRecord.id).label("last"))
        .where(VerdictRecord.kernel == kernel)
        .group_by(VerdictRecord.gpu_kind).order_by(func.max(VerdictRecord.id).desc())
    ).all()
    return [r[0] for r in rows]


def kernel_shapes(session: Session, kernel: str, gpu_kind: str) -> list[str]:
    """Shape labels with a latency history on this GPU kind."""
    return list(session.scalars(
        select(Metric.shape).distinct()
        .where(Metric.kernel == kernel, Metric.gpu_kind == gpu_kind,
               Metric.name == "latency_median_us", Metric.shape != "")
        .order_by(Metric.shape)
    ))


def latest_rules(session: Session, kernel: str, gpu_kind: str) -> list[dict]:
    """The rule table (JSON rows) of the newest verdict of this kernel on this GPU kind."""
    rules = session.scalar(
        select(VerdictRecord.rules)
        .where(VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
        .order_by(VerdictRecord.revision_id.desc()).limit(1)
    )
    return list(rules or [])


def kernel_history(
    session: Session,
    kernel: str,
    gpu_kind: str,
    wanted: Sequence[tuple[str, Sequence[str]]],
    shapes: Sequence[str] | None = None,
    max_points: int = MAX_POINTS,
) -> KernelHistory:
    """The history of the `wanted` metrics: (metric name, series names) pairs, all shapes or `shapes`.

    Points are in commit order (revision id order, which is submission order). Above `max_points`
    revisions each point is a bucket of consecutive revision ids: mean, min, max and its newest
    revision.
    """
    order = session.execute(
        select(VerdictRecord.revision_id, VerdictRecord.verdict)
        .where(VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
        .order_by(VerdictRecord.revision_id)
    ).all()
    position = {rev_id: i for i, (rev_id, _) in enumerate(order)}
    verdict_of = dict(order)
    if not order:
        return KernelHistory(kernel, gpu_kind, 0, 1, [])
    first_id, last_id = order[0][0], order[-1][0]
    width = max(1, -(-(last_id - first_id + 1) // max_points))   # ceil division

    rows: list[Row] = []
    for name, series in wanted:
        rows.extend(_metric_rows(session, kernel, gpu_kind, name, series, shapes, first_id, width))
    meta = _revision_meta(session, {r.revision_id for r in rows})

    bucket_verdict: dict[int, str] = {}
    if width > 1:
        for rev_id, verdict in order:
            b = (rev_id - first_id) // width
            old = bucket_verdict.get(b)
            if old is None or VERDICT_SEVERITY.get(verdict, 9) < VERDICT_SEVERITY.get(old, 9):
                bucket_verdict[b] = verdict

    out: dict[tuple[str, str, str], SeriesHistory] = {}
    for r in rows:
        if r.revision_id not in position:
            continue   # a metric stored for a job whose verdict is not there (yet)
        key = (r.name, r.shape, r.series)
        hist = out.get(key) or out.setdefault(key, SeriesHistory(r.name, r.shape, r.series, r.unit))
        sha, at, message = meta[r.revision_id]
        verdict = (bucket_verdict.get((r.revision_id - first_id) // width, "") if width > 1
                   else verdict_of.get(r.revision_id, ""))
        hist.points.append(HistoryPoint(
            position[r.revision_id], r.revision_id, r.value, r.low, r.high, r.count,
            sha, at, message, verdict))
    return KernelHistory(kernel, gpu_kind, len(order), width, list(out.values()))


def _metric_rows(session: Session, kernel: str, gpu_kind: str, name: str,
                 series: Sequence[str], shapes: Sequence[str] | None,
                 first_id: int, width: int) -> Sequence[Row]:
    where = [Metric.kernel == kernel, Metric.gpu_kind == gpu_kind, Metric.name == name,
             Metric.revision_id >= first_id]
    if series:
        where.append(Metric.series.in_(series))
    if shapes:
        where.append(Metric.shape.in_([*shapes, ""]))   # "" = per-kernel figures (registers)
    if width == 1:
        stmt = select(Metric.name, Metric.shape, Metric.series, Metric.revision_id,
                      Metric.value, Metric.value.label("low"), Metric.value.label("high"),
                      literal(1).label("count"), Metric.unit)
        return session.execute(stmt.where(*where).order_by(Metric.revision_id)).all()
    bucket = ((Metric.revision_id - first_id) // width).label("bucket")
    stmt = (
        select(Metric.name, Metric.shape, Metric.series,
               func.max(Metric.revision_id).label("revision_id"),
               func.avg(Metric.value).label("value"), func.min(Metric.value).label("low"),
               func.max(Metric.value).label("high"), func.count().label("count"),
               func.max(Metric.unit).label("unit"))
        .where(*where)
        .group_by(Metric.name, Metric.shape, Metric.series, bucket)
        .order_by(Metric.shape, Metric.series, bucket)
    )
    return session.execute(stmt).all()


def _revision_meta(session: Session, ids: set[int]) -> dict[int, tuple[str, datetime | None, str]]:
    if not ids:
        return {}
    stmt = select(Revision.id, Revision.sha, Revision.committed_at, Revision.message).where(
        Revision.id.in_(bindparam("ids", expanding=True)))
    return {i: (sha, at, (msg or "").split("\n", 1)[0])
            for i, sha, at, msg in session.execute(stmt, {"ids": sorted(ids)})}
