"""Read queries behind the dashboards: overview, queue, recent revisions, a kernel's metric history.

All reads, no writes. History stays cheap at 10,000 revisions: a `HistoryStore` holds each
(kernel, GPU kind)'s raw rows and reads only the new ones after a verdict (see
`gate/storage/history_store.py`); when a kernel has more than `max_points` revisions they are
aggregated into equal revision-id buckets (mean, min, max, count; `history_buckets.py`) instead of
shipping every point; peers (SDPA, cuBLAS) are read for the last jobs only.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gate.storage.history_buckets import bucket_series, bucket_width, worst_verdict_codes
from gate.storage.history_store import HistoryStore, RevisionMeta, Trace
from gate.storage.models import Job, JobState, Metric, Revision, VerdictRecord

MAX_POINTS = 2000
PEERS = ("sdpa_flash", "sdpa_cudnn", "sdpa_efficient", "cublas")


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
    """One point of a trace, for the JSON API; pages read `SeriesHistory`'s columns instead."""

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


@dataclass(frozen=True, eq=False)
class SeriesHistory:
    """One trace in commit order, as columns of equal length: a page draws straight from these
    (a kernel page has ~8,000 points; an object per point cost more than the rest of the build)."""

    name: str                   # metric name, e.g. latency_median_us
    shape: str
    series: str                 # candidate, sdpa_flash, sm_90a, ...
    unit: str
    x: np.ndarray               # int64: commit order of the point's (newest) revision
    revision_ids: np.ndarray    # int64: the revision a click opens (a bucket's newest)
    value: np.ndarray           # float64: the value, or a bucket's mean
    low: np.ndarray             # = value for single points; a bucket's minimum
    high: np.ndarray
    count: np.ndarray           # int64: revisions behind each point (1 unless aggregated)
    verdicts: list[str]         # per point; a bucket's worst, "" when none stored

    def __len__(self) -> int:
        return int(self.x.size)


@dataclass(frozen=True)
class KernelHistory:
    kernel: str
    gpu_kind: str
    revisions: int              # revisions with a verdict on this GPU kind
    bucket_revisions: int       # 1 = every revision is a point
    series: list[SeriesHistory]
    details: dict[int, RevisionMeta] = field(default_factory=dict)   # of every point's revision


def history_points(s: SeriesHistory, details: dict[int, RevisionMeta]) -> list[HistoryPoint]:
    """`s` as point objects, with each revision's sha, date and message from `details`."""
    return [HistoryPoint(x, rev, value, low, high, count, *details[rev], verdict)
            for x, rev, value, low, high, count, verdict in zip(
                s.x.tolist(), s.revision_ids.tolist(), s.value.tolist(), s.low.tolist(),
                s.high.tolist(), s.count.tolist(), s.verdicts)]


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


def data_version(session: Session, kernel: str) -> tuple[int, int]:
    """(verdicts stored for `kernel`, the newest one's id): changes whenever its history does.

    A job's metrics are stored in the transaction that stores its verdict (`store_outcome`), and
    history rows are only ever added, so new verdicts are the only way the history changes. The
    count is there because ids are not commit order in PostgreSQL: a transaction that took a lower
    id can commit after the max id was read. One range of `ix_verdicts_kernel`.
    """
    count, newest = session.execute(
        select(func.count(), func.max(VerdictRecord.id)).where(VerdictRecord.kernel == kernel)
    ).one()
    return count, newest or 0


def recent_histories(session: Session, limit: int) -> list[tuple[str, str]]:
    """(kernel, GPU kind) pairs with verdicts, the one with the newest verdict first; at most `limit`."""
    rows = session.execute(
        select(VerdictRecord.kernel, VerdictRecord.gpu_kind)
        .group_by(VerdictRecord.kernel, VerdictRecord.gpu_kind)
        .order_by(func.max(VerdictRecord.id).desc()).limit(limit)
    ).all()
    return [(k, g) for k, g in rows]


def kernel_gpu_kinds(session: Session, kernel: str) -> list[str]:
    """GPU kinds this kernel has verdicts on, the one with the longest history first."""
    rows = session.execute(
        select(VerdictRecord.gpu_kind)
        .where(VerdictRecord.kernel == kernel).group_by(VerdictRecord.gpu_kind)
        .order_by(func.count().desc(), func.max(VerdictRecord.id).desc())
    ).all()
    return [r[0] for r in rows]


def kernel_shapes(session: Session, kernel: str, gpu_kind: str) -> list[str]:
    """Shape labels with a candidate latency history on this GPU kind."""
    return _distinct(session, Metric.shape, kernel, gpu_kind, "latency_median_us", "candidate")


def kernel_archs(session: Session, kernel: str, gpu_kind: str) -> list[str]:
    """Target archs with register counts (the series of the per-kernel ptxas figures)."""
    return _distinct(session, Metric.series, kernel, gpu_kind, "registers", None)


def _distinct(session: Session, column, kernel: str, gpu_kind: str, name: str,  # noqa: ANN001
              series: str | None) -> list[str]:
    where = [Metric.kernel == kernel, Metric.gpu_kind == gpu_kind, Metric.name == name]
    if series is not None:
        where.append(Metric.series == series)
    return list(session.scalars(select(column).distinct().where(*where).order_by(column)))


def latest_rules(session: Session, kernel: str, gpu_kind: str) -> list[dict]:
    """The rule table (JSON rows) of the newest verdict of this kernel on this GPU kind."""
    rules = session.scalar(
        select(VerdictRecord.rules)
        .where(VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
        .order_by(VerdictRecord.revision_id.desc()).limit(1)
    )
    return list(rules or [])


def peer_levels(session: Session, kernel: str, gpu_kind: str, name: str, shapes: Sequence[str],
                last_revisions: int = 20) -> dict[tuple[str, str], float]:
    """(shape, peer) -> median of the peer's `name` over the kernel's last `last_revisions` jobs.

    Peers (PyTorch SDPA backends, cuBLAS) are references, not the subject: the pages draw them as
    one level each, which also keeps a long history from reading every peer measurement.
    """
    cutoff = session.scalar(
        select(VerdictRecord.revision_id)
        .where(VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
        .order_by(VerdictRecord.revision_id.desc()).offset(last_revisions - 1).limit(1)
    ) or 0
    values: dict[tuple[str, str], list[float]] = {}
    for shape, series, value in session.execute(
        select(Metric.shape, Metric.series, Metric.value).where(
            Metric.kernel == kernel, Metric.gpu_kind == gpu_kind, Metric.name == name,
            Metric.series.in_(PEERS), Metric.shape.in_(shapes), Metric.revision_id >= cutoff)
    ):
        values.setdefault((shape, series), []).append(value)
    return {k: statistics.median(v) for k, v in sorted(values.items())}


def kernel_history(
    session: Session,
    kernel: str,
    gpu_kind: str,
    traces: Sequence[Trace],
    max_points: int = MAX_POINTS,
    store: HistoryStore | None = None,
) -> KernelHistory:
    """The history of each (metric name, shape, series) trace that has data, in commit order.

    Commit order is revision id order (submission order). Above `max_points` revisions each point
    is a bucket of consecutive revision ids: mean, min, max, and its newest revision (what a
    click opens); its verdict is the worst in the bucket. `store` holds histories between calls
    (the pages pass the app's); without one, everything is read.
    """
    store = store if store is not None else HistoryStore(max_histories=1)
    conn = session.connection()
    held = store.history(conn, kernel, gpu_kind, traces)
    order = held.revision_ids
    if not order.size:
        return KernelHistory(kernel, gpu_kind, 0, 1, [])
    first_id = int(order[0])
    width = bucket_width(first_id, int(order[-1]), order.size, max_points)
    bucketed = [(t, bucket_series(held.traces[t].revision_ids, held.traces[t].values, first_id,
                                  width)) for t in dict.fromkeys(traces)]
    bucketed = [(t, b) for t, b in bucketed if b.newest_ids.size]
    details = store.revision_meta(conn, kernel, gpu_kind,
                                  {i for _, b in bucketed for i in b.newest_ids.tolist()})
    out = []
    for (name, shape, series), b in bucketed:
        # x: the position of the (last) verdict of the point's revision in commit order.
        xs = np.searchsorted(order, b.newest_ids, side="right") - 1
        codes = worst_verdict_codes(order, held.verdict_codes, first_id, width, b.newest_ids)
        out.append(SeriesHistory(name, shape, series, held.traces[(name, shape, series)].unit,
                                 xs, b.newest_ids, b.mean, b.low, b.high, b.count,
                                 [held.verdicts[c] for c in codes.tolist()]))
    return KernelHistory(kernel, gpu_kind, int(order.size), width, out, details)
