"""Each (kernel, GPU kind)'s raw metric history held in process, refreshed by reading only what is new.

Reading a kernel page's twenty traces over 10,000 revisions costs SQLite ~100 ms of the page's
200 ms budget, every time a new verdict makes the page cache miss. History rows are only ever added,
and a job's metrics are stored in the transaction of its verdict (`store_outcome`), so a refresh
reads the verdicts above the highest held revision id and those revisions' metric rows only.

Everything is read again when the stored verdict count differs from the held count plus the new
rows: a late result landed below the highest held revision (a rerun of an older revision, or, in
PostgreSQL, a transaction that took a lower id and committed later). Held metric rows are those of
revisions with a verdict, so a metric read between its verdict's commit and ours is left for the
refresh that sees the verdict. Full reads go through the DB-API cursor (`columns.py`): ~200,000
rows as `Row` objects cost as much as the query. The server warms up after a restart
(`gate/api/series_warmup.py`).

Rows are held in revision id order; the drawn order (`commit_order.py`) is computed again whenever
new verdicts arrive, so an ancestor submitted late is drawn where it belongs. Arrays are replaced,
never changed in place, so a `HeldSeries` handed out stays valid without the lock. With `snapshots`,
a history read from the start (or given new traces) is also saved (`series_snapshot.py`), and one
not held is first looked for there.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC

import numpy as np
from sqlalchemy import Connection, bindparam, func, select

from gate.read_models.kernel_series import RevisionMeta, Trace
from gate.storage.columns import fetch_columns
from gate.storage.commit_order import CommitOrder, commit_order
from gate.storage.models import Metric, Revision, VerdictRecord
from gate.storage.series_buckets import verdict_vocabulary
from gate.storage.series_failures import Failed, read_failed
from gate.storage.series_reuse import read_reused
from gate.storage.series_snapshot import SeriesSnapshots

SAVE_AFTER_ROWS = 1000     # verdict rows appended since a history was saved that make it worth saving again



@dataclass(frozen=True)
class HeldSeries:
    revision_ids: np.ndarray      # int64, ascending; revisions with a verdict only
    values: np.ndarray            # float64
    unit: str
    environments: np.ndarray      # object (str): each value's environment key ("" = unknown)


@dataclass(frozen=True)
class Places:
    """Where each verdict row's revision stands in the repository (see `commit_order.py`)."""

    positions: np.ndarray     # float64: first-parent depth, NaN = unknown (planned before it was kept)
    times: np.ndarray         # float64: commit time in seconds, NaN = unknown
    on_branch: np.ndarray     # bool: on the drawn branch's line

    def then(self, more: Places) -> Places:
        return Places(*(np.concatenate([getattr(self, f), getattr(more, f)])
                        for f in ("positions", "times", "on_branch")))


@dataclass
class HeldHistory:
    """What a page reads of one (kernel, GPU kind): its verdicts and its traces, in revision id
    order, and the commit order they are drawn in."""

    revision_ids: np.ndarray                          # the verdicts' revisions, ascending
    verdict_codes: np.ndarray                         # index into `verdicts`, worst first
    verdicts: tuple[str, ...]
    places: Places
    order: CommitOrder                                # computed from `places` by `_held`
    failed: Failed                                    # the rules that failed each verdict row
    reused: dict[int, str]                            # revision id -> whose figures it reused (`series_reuse.py`)
    traces: dict[Trace, HeldSeries] = field(default_factory=dict)


def _held(revision_ids: np.ndarray, verdict_codes: np.ndarray, verdicts: tuple[str, ...], places: Places,
          failed: Failed, reused: dict[int, str], traces: dict[Trace, HeldSeries] | None = None) -> HeldHistory:
    """A held history with its commit order, computed again over every row: a new revision may
    belong anywhere in it."""
    order = commit_order(revision_ids, places.positions, places.times, places.on_branch)
    return HeldHistory(revision_ids, verdict_codes, verdicts, places, order, failed, reused, traces or {})


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    held: HeldHistory | None = None
    meta: dict[int, RevisionMeta] = field(default_factory=dict)   # revisions never change
    saved_rows: int = -1          # verdict rows of the history last saved (-1: none saved by us)


def _witness(conn: Connection, kernel: str, gpu_kind: str, of: tuple | None = None) -> tuple:
    """Which database this is, for a saved history (`series_snapshot.py`): ((id, time), ...) of the
    oldest and newest verdict rows of (kernel, GPU kind), or, given an earlier witness `of`, of the
    rows with its ids as this database holds them now (equal only in the database that made it)."""
    where = (VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
    row = select(VerdictRecord.id, VerdictRecord.created_at).where(*where)
    if of is not None:
        found = conn.execute(row.where(VerdictRecord.id.in_([i for i, _ in of])).order_by(VerdictRecord.id)).all()
    else:
        found = [*conn.execute(row.order_by(VerdictRecord.id).limit(1)),
                 *conn.execute(row.order_by(VerdictRecord.id.desc()).limit(1))]
    return tuple(dict.fromkeys((int(i), str(at)) for i, at in found))


class SeriesCache:
    def __init__(self, max_histories: int = 32, snapshots: SeriesSnapshots | None = None) -> None:
        self.max_histories = max_histories
        self.snapshots = snapshots
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.full_reads = 0           # how many times a history was read from the start

    def history(self, conn: Connection, kernel: str, gpu_kind: str,
                traces: Sequence[Trace]) -> HeldHistory:
        """The current history of `kernel` on `gpu_kind` holding (at least) `traces`."""
        entry = self._entry(kernel, gpu_kind)
        with entry.lock:
            if entry.held is None and self.snapshots is not None:
                entry.held = self.snapshots.load(kernel, gpu_kind,
                                                 lambda seen: seen == _witness(conn, kernel, gpu_kind, seen))
                entry.saved_rows = -1 if entry.held is None else entry.held.revision_ids.size
            reads = self.full_reads
            entry.held = self._refresh(conn, kernel, gpu_kind, entry.held)
            held = entry.held
            upto = int(held.revision_ids[-1]) if held.revision_ids.size else 0
            missing = [t for t in dict.fromkeys(traces) if t not in held.traces]
            for t in missing:
                ids, values, envs = _metric_rows(conn, kernel, gpu_kind, t, 0, upto, held.revision_ids)
                held.traces[t] = HeldSeries(ids, values, _unit(conn, kernel, gpu_kind, t), envs)
            held = replace(held, traces=dict(held.traces))
            if self.snapshots is not None and (missing or reads != self.full_reads or
                                               held.revision_ids.size - entry.saved_rows >= SAVE_AFTER_ROWS):
                entry.saved_rows = held.revision_ids.size
                self.snapshots.save_later(kernel, gpu_kind, held, _witness(conn, kernel, gpu_kind))
            return held

    def revision_meta(self, conn: Connection, kernel: str, gpu_kind: str,
                      ids: set[int]) -> dict[int, RevisionMeta]:
        """sha, date and message of each of `ids`, read once per revision."""
        entry = self._entry(kernel, gpu_kind)
        with entry.lock:
            unknown = sorted(ids - entry.meta.keys())
            if unknown:
                stmt = select(Revision.id, Revision.sha, Revision.committed_at,
                              Revision.message).where(
                    Revision.id.in_(bindparam("ids", expanding=True)))
                for i, sha, at, msg in conn.execute(stmt, {"ids": unknown}):
                    entry.meta[i] = (sha, at, (msg or "").split("\n", 1)[0])
            return {i: entry.meta[i] for i in ids}

    def _entry(self, kernel: str, gpu_kind: str) -> _Entry:
        with self._lock:
            entry = self._entries.setdefault((kernel, gpu_kind), _Entry())
            self._entries.move_to_end((kernel, gpu_kind))
            while len(self._entries) > self.max_histories:
                self._entries.popitem(last=False)
            return entry

    def _refresh(self, conn: Connection, kernel: str, gpu_kind: str,
                 held: HeldHistory | None) -> HeldHistory:
        where = (VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
        count, newest = conn.execute(
            select(func.count(), func.max(VerdictRecord.revision_id)).where(*where)).one()
        after = int(held.revision_ids[-1]) if held is not None and held.revision_ids.size else 0
        if held is not None and count == held.revision_ids.size and (newest or 0) == after:
            return held
        rev_ids, names = fetch_columns(conn, _VERDICTS, {"kernel": kernel, "gpu_kind": gpu_kind,
                                                         "after": after})
        if held is None or held.revision_ids.size + len(rev_ids) != count:
            return self._read_all(conn, kernel, gpu_kind, held)
        verdicts = verdict_vocabulary(names, held.verdicts)
        new_ids = np.array(rev_ids, dtype=np.int64)
        codes = np.array([verdicts.index(v) for v in names], dtype=np.int64)
        upto = int(new_ids[-1])
        places = _places(conn, kernel, gpu_kind, after, new_ids)
        failed = read_failed(conn, kernel, gpu_kind, after, new_ids, names, held.revision_ids.size)
        traces = {}
        for t, s in held.traces.items():
            ids, values, envs = _metric_rows(conn, kernel, gpu_kind, t, after, upto, new_ids)
            unit = s.unit or (_unit(conn, kernel, gpu_kind, t) if ids.size else "")
            traces[t] = HeldSeries(np.concatenate([s.revision_ids, ids]),
                                   np.concatenate([s.values, values]), unit,
                                   np.concatenate([s.environments, envs]))
        return _held(np.concatenate([held.revision_ids, new_ids]),
                     np.concatenate([held.verdict_codes, codes]), verdicts, held.places.then(places),
                     held.failed.then(failed), {**held.reused, **read_reused(conn, kernel, gpu_kind, after)},
                     traces)

    def _read_all(self, conn: Connection, kernel: str, gpu_kind: str,
                  held: HeldHistory | None) -> HeldHistory:
        """The history from the start, with the traces `held` had (they will be asked for again)."""
        self.full_reads += 1
        rev_ids, names = fetch_columns(conn, _VERDICTS, {"kernel": kernel, "gpu_kind": gpu_kind,
                                                         "after": 0})
        verdicts = verdict_vocabulary(names)
        code = {v: i for i, v in enumerate(verdicts)}
        ids = np.array(rev_ids, dtype=np.int64)
        fresh = _held(ids, np.array([code[v] for v in names], dtype=np.int64), verdicts,
                      _places(conn, kernel, gpu_kind, 0, ids), read_failed(conn, kernel, gpu_kind, 0, ids, names, 0),
                      read_reused(conn, kernel, gpu_kind, 0))
        upto = int(ids[-1]) if ids.size else 0
        for t, s in (held.traces.items() if held is not None else ()):
            t_ids, values, envs = _metric_rows(conn, kernel, gpu_kind, t, 0, upto, ids)
            fresh.traces[t] = HeldSeries(t_ids, values, s.unit, envs)
        return fresh


_VERDICTS = (select(VerdictRecord.revision_id, VerdictRecord.verdict)
             .where(VerdictRecord.kernel == bindparam("kernel"),
                    VerdictRecord.gpu_kind == bindparam("gpu_kind"),
                    VerdictRecord.revision_id > bindparam("after"))
             .order_by(VerdictRecord.revision_id))
_METRICS = (select(Metric.revision_id, Metric.value, Metric.environment)
            .where(Metric.kernel == bindparam("kernel"), Metric.gpu_kind == bindparam("gpu_kind"),
                   Metric.name == bindparam("name"), Metric.series == bindparam("series"),
                   Metric.shape == bindparam("shape"), Metric.revision_id > bindparam("after"),
                   Metric.revision_id <= bindparam("upto"))
            .order_by(Metric.revision_id))


_PLACES = (select(Revision.id, Revision.position, Revision.on_branch, Revision.pull_request,
                  Revision.committed_at)
           .join(VerdictRecord, VerdictRecord.revision_id == Revision.id)
           .where(VerdictRecord.kernel == bindparam("kernel"), VerdictRecord.gpu_kind == bindparam("gpu_kind"),
                  VerdictRecord.revision_id > bindparam("after")))


def _places(conn: Connection, kernel: str, gpu_kind: str, after: int, ids: np.ndarray) -> Places:
    """The places of revisions `ids` (verdict rows above `after`, as read). Read by id: a verdict
    stored since `ids` were read adds a revision here, never takes one away. A revision planned
    before places were kept counts on the branch unless it is a pull request's."""
    found = {i: (np.nan if pos is None else float(pos),
                 np.nan if at is None else at.replace(tzinfo=UTC).timestamp(),
                 (pull_request is None) if on is None else bool(on))
             for i, pos, on, pull_request, at in conn.execute(
                 _PLACES, {"kernel": kernel, "gpu_kind": gpu_kind, "after": after})}
    rows = [found[i] for i in ids.tolist()]
    columns = list(zip(*rows)) if rows else [(), (), ()]
    return Places(np.array(columns[0], dtype=np.float64), np.array(columns[1], dtype=np.float64),
                  np.array(columns[2], dtype=bool))


def _metric_rows(conn: Connection, kernel: str, gpu_kind: str, trace: Trace, after: int,
                 upto: int, with_verdict: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(revision ids, values, environments) of `trace` in (after, upto], revisions in `with_verdict` only.

    Equality on every leading column of `ix_metrics_series` and only its columns read, so SQLite
    answers from that index alone, one range of it.
    """
    name, shape, series = trace
    rev_ids, vals, envs = fetch_columns(conn, _METRICS, {
        "kernel": kernel, "gpu_kind": gpu_kind, "name": name, "series": series, "shape": shape,
        "after": after, "upto": upto})
    ids = np.array(rev_ids, dtype=np.int64)
    values = np.array(vals, dtype=np.float64)
    shared: dict[str, str] = {}      # one string object per key: the array holds pointers only
    environments = np.array([shared.setdefault(e, e) for e in envs], dtype=object)
    keep = np.isin(ids, with_verdict)
    return (ids, values, environments) if keep.all() else (ids[keep], values[keep], environments[keep])


def _unit(conn: Connection, kernel: str, gpu_kind: str, trace: Trace) -> str:
    name, shape, series = trace
    return conn.scalar(select(Metric.unit).where(
        Metric.kernel == kernel, Metric.gpu_kind == gpu_kind, Metric.name == name,
        Metric.series == series, Metric.shape == shape).limit(1)) or ""
