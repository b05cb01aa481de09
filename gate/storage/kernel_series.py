"""Read queries behind a kernel's page and `GET /api/v1/kernels/{name}/history` (`uow.history`).

All reads, no writes. A `SeriesCache` holds each (kernel, GPU kind)'s rows and reads only the new
ones after a verdict; the series are in commit order (`commit_order.py`), revisions off the default
branch apart, bucketed over `max_points` line places (`series_buckets.py`); peers are read for the
last jobs only.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

import numpy as np
from sqlalchemy import func, select

from gate.domain.codec import from_json
from gate.domain.names import Metric as M
from gate.domain.names import Side
from gate.domain.verdict import RuleRow
from gate.read_models.kernel_series import KernelHistory, KernelPage, SeriesHistory, Trace, TracesOf
from gate.storage.db import Queries
from gate.storage.models import Metric, VerdictRecord
from gate.storage.series_buckets import Buckets, bucket_series, bucket_width, worst_places
from gate.storage.series_cache import HeldHistory, SeriesCache

MAX_POINTS = 2000
# A timing series that is neither side is a peer: its name is the one the workload gave it.
_SIDES = tuple(side.value for side in Side)


class KernelSeries(Queries):
    """A kernel's history on one GPU kind (`uow.history`)."""

    def data_version(self, kernel: str) -> tuple[int, int]:
        """(verdicts stored for `kernel`, the newest one's id): changes whenever its history does. A job's
        metrics are stored with its verdict (`store_outcome`) and rows are only ever added; the count is
        there because ids are not commit order in PostgreSQL (a transaction that took a lower id can
        commit after the max id was read). One range of `ix_verdicts_kernel`."""
        count, newest = self._session.execute(
            select(func.count(), func.max(VerdictRecord.id)).where(VerdictRecord.kernel == kernel)
        ).one()
        return count, newest or 0

    def recent_histories(self, limit: int) -> list[tuple[str, str]]:
        """(kernel, GPU kind) pairs with verdicts, the one with the newest verdict first; at most `limit`."""
        rows = self._session.execute(
            select(VerdictRecord.kernel, VerdictRecord.gpu_kind)
            .group_by(VerdictRecord.kernel, VerdictRecord.gpu_kind)
            .order_by(func.max(VerdictRecord.id).desc()).limit(limit)
        ).all()
        return [(k, g) for k, g in rows]

    def gpu_kinds(self, kernel: str) -> list[str]:
        """GPU kinds this kernel has verdicts on, the one of its newest verdict first (the page opens
        on the GPU the latest runs were measured on, not on the one with the longest past)."""
        rows = self._session.execute(
            select(VerdictRecord.gpu_kind)
            .where(VerdictRecord.kernel == kernel).group_by(VerdictRecord.gpu_kind)
            .order_by(func.max(VerdictRecord.revision_id).desc(), func.max(VerdictRecord.id).desc())
        ).all()
        return [r[0] for r in rows]

    def shapes(self, kernel: str, gpu_kind: str) -> list[str]:
        """Shape labels with a candidate latency history on this GPU kind."""
        return self._distinct(Metric.shape, kernel, gpu_kind, M.LATENCY_MEDIAN_US.value, Side.CANDIDATE.value)

    def archs(self, kernel: str, gpu_kind: str) -> list[str]:
        """Target archs with register counts (the series of the per-kernel ptxas figures)."""
        return self._distinct(Metric.series, kernel, gpu_kind, M.REGISTERS.value, None)

    def _distinct(self, column, kernel: str, gpu_kind: str, name: str,  # noqa: ANN001
                  series: str | None) -> list[str]:
        where = [Metric.kernel == kernel, Metric.gpu_kind == gpu_kind, Metric.name == name]
        if series is not None:
            where.append(Metric.series == series)
        return list(self._session.scalars(select(column).distinct().where(*where).order_by(column)))

    def latest_rules(self, kernel: str, gpu_kind: str) -> list[RuleRow]:
        """The rule table of the newest verdict of this kernel on this GPU kind, decoded."""
        rules = self._session.scalar(
            select(VerdictRecord.rules)
            .where(VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
            .order_by(VerdictRecord.revision_id.desc()).limit(1)
        )
        return from_json(list[RuleRow], rules or [], path="rules")

    def peer_levels(self, kernel: str, gpu_kind: str, name: str, shapes: Sequence[str],
                    last_revisions: int = 20) -> dict[tuple[str, str], float]:
        """(shape, peer) -> median of the peer's `name` over the kernel's last `last_revisions` jobs. Peers
        (SDPA backends, cuBLAS, a custom workload's references) are references, not the subject: the
        pages draw each as one level, which also keeps a long history from reading every peer row."""
        cutoff = self._session.scalar(
            select(VerdictRecord.revision_id)
            .where(VerdictRecord.kernel == kernel, VerdictRecord.gpu_kind == gpu_kind)
            .order_by(VerdictRecord.revision_id.desc()).offset(last_revisions - 1).limit(1)
        ) or 0
        values: dict[tuple[str, str], list[float]] = {}
        # Read as one range of `ix_metrics_revision` (the newest revisions' figures): with the kernel
        # compared as an expression no kernel-led index applies. SQLite (no statistics) chose the
        # series index, whose range is every peer row of the metric: 0.3 s at 100,000 revisions.
        for shape, series, value in self._session.execute(
            select(Metric.shape, Metric.series, Metric.value).where(
                Metric.kernel.concat("") == kernel, Metric.gpu_kind == gpu_kind, Metric.name == name,
                Metric.series.not_in(_SIDES), Metric.shape.in_(shapes), Metric.revision_id >= cutoff)
        ):
            values.setdefault((shape, series), []).append(value)
        return {k: statistics.median(v) for k, v in sorted(values.items())}

    def history(self, kernel: str, gpu_kind: str, traces: Sequence[Trace], max_points: int = MAX_POINTS,
                cache: SeriesCache | None = None) -> KernelHistory:
        """The history of each (metric name, shape, series) trace that has data, in commit order
        (`commit_order.py`; revisions off the line are the `off_branch` points). Above `max_points` line
        revisions each point is a bucket of consecutive line places: mean, min, max, its last revision
        (what a click opens) and its worst verdict. `cache` holds histories between calls (the pages
        pass the app's); without one, everything is read."""
        cache = cache if cache is not None else SeriesCache(max_histories=1)
        conn = self._session.connection()
        held = cache.history(conn, kernel, gpu_kind, traces)
        line = held.order.line
        if not held.revision_ids.size:
            return KernelHistory(kernel, gpu_kind, 0, 1, [])
        width = bucket_width(0, max(line.size - 1, 0), line.size, max_points)
        drawn = [_drawn(held, t, width) for t in dict.fromkeys(traces)]
        on_line = [on for on, _ in drawn if on is not None]
        off_line = [off for _, off in drawn if off is not None]
        ids = {i for s in (*on_line, *off_line) for i in s.revision_ids.tolist()}
        return KernelHistory(kernel, gpu_kind, int(held.revision_ids.size), width, on_line,
                             cache.revision_meta(conn, kernel, gpu_kind, ids),
                             held.reused, off_line)

    def kernel_page(self, kernel: str, gpu: str | None, shape: str | None, *, traces: TracesOf,
                    peer_metrics: Mapping[str, str], max_points: int, cache: SeriesCache) -> KernelPage | None:
        """What a kernel's page shows on `gpu` (else the GPU of its newest verdict) for `shape` (else
        every shape): the history of `traces(shapes, archs)`, the levels of each of `peer_metrics`
        (chart key -> metric) and the newest rule table. None when the kernel has no verdict."""
        gpus = self.gpu_kinds(kernel)
        if not gpus:
            return None
        gpu = gpu if gpu in gpus else gpus[0]
        shapes = self.shapes(kernel, gpu)
        chosen = [shape] if shape in shapes else shapes
        history = self.history(kernel, gpu, traces(chosen, self.archs(kernel, gpu)), max_points, cache)
        peers = {key: self.peer_levels(kernel, gpu, metric, chosen) for key, metric in peer_metrics.items()}
        return KernelPage(kernel, gpu, gpus, shape if shape in shapes else "", shapes, history,
                          self.latest_rules(kernel, gpu), peers)


def _drawn(held: HeldHistory, trace: Trace, width: int) -> tuple[SeriesHistory | None, SeriesHistory | None]:
    """`trace` on the line (bucketed `width` line places a point) and off it (one point per row,
    drawn beside its line place), each None when it has no point there."""
    s, order = held.traces[trace], held.order
    rows = np.searchsorted(held.revision_ids, s.revision_ids, side="right") - 1   # its revision's last verdict
    ranks = order.rank[rows]
    on = ranks >= 0
    line_rows = order.line
    places, values, environments = (ranks, s.values, s.environments) if on.all() else (
        ranks[on], s.values[on], s.environments[on])
    if places.size > 1 and (places[1:] < places[:-1]).any():     # submitted out of order: sort
        by_place = np.argsort(places, kind="stable")
        places, values, environments = places[by_place], values[by_place], environments[by_place]
    b, envs = _by_environment(places, values, environments, width)
    drawn = None
    if b.newest_ids.size:
        # each point shows the verdict row of its bucket's worst verdict (its newest such revision)
        shown = line_rows[worst_places(held.verdict_codes[line_rows], width, b.newest_ids)]
        drawn = SeriesHistory(*trace, s.unit, b.newest_ids, held.revision_ids[line_rows[b.newest_ids]],
                              b.mean, b.low, b.high, b.count,
                              [held.verdicts[c] for c in held.verdict_codes[shown].tolist()], envs,
                              _failed_on_line(held, trace[1], width, b.newest_ids),
                              held.failed.deciding[shown].tolist())
    apart = None
    if (~on).any():
        off = np.flatnonzero(~on)
        off = off[np.lexsort((s.revision_ids[off], order.beside[rows[off]]))]
        values, shown = s.values[off], rows[off]
        apart = SeriesHistory(*trace, s.unit, order.beside[shown], s.revision_ids[off], values, values, values,
                              np.ones(off.size, dtype=np.int64),
                              [held.verdicts[c] for c in held.verdict_codes[shown].tolist()],
                              s.environments[off].tolist(), _failed_at_rows(held, trace[1], shown),
                              held.failed.deciding[shown].tolist())
    return drawn, apart


def _failed_on_line(held: HeldHistory, shape: str, width: int, at: np.ndarray) -> list[tuple[str, ...]]:
    """Per point at line places `at` (ascending, each its bucket's last): the rules that failed at
    the revisions of its bucket that bear the bucket's verdict, at `shape` or the whole kernel's.
    Numpy over the failing rows only (a history's few rejects), then one tuple per marked bucket."""
    out: list[tuple[str, ...]] = [()] * at.size
    f, order = held.failed, held.order
    pick = f.at_shape(shape)
    places = order.rank[f.rows[pick]]
    pick, places = pick[places >= 0], places[places >= 0]
    if not pick.size:
        return out
    codes = held.verdict_codes[order.line]
    bears = codes[places] == codes[worst_places(codes, width, places)]
    by_bucket: dict[int, dict[str, None]] = {}
    for key, rule in zip((places[bears] // width).tolist(), f.rules[pick[bears]].tolist()):
        by_bucket.setdefault(key, {})[rule] = None
    keys = at // width
    for key, rules in by_bucket.items():
        for i in range(int(np.searchsorted(keys, key)), int(np.searchsorted(keys, key, side="right"))):
            out[i] = tuple(rules)
    return out


def _failed_at_rows(held: HeldHistory, shape: str, rows: np.ndarray) -> list[tuple[str, ...]]:
    """Per verdict row of `rows`: the rules that failed there, at `shape` or the whole kernel's."""
    f = held.failed
    pick = f.at_shape(shape)
    by_row: dict[int, dict[str, None]] = {}
    for row, rule in zip(f.rows[pick].tolist(), f.rules[pick].tolist()):
        by_row.setdefault(row, {})[rule] = None
    return [tuple(by_row.get(r, ())) for r in rows.tolist()]


def _by_environment(places: np.ndarray, values: np.ndarray, environments: np.ndarray,
                    width: int) -> tuple[Buckets, list[str]]:
    """The trace's buckets of `width` line places (`places` ascending), each of one environment only
    (a bucket that spans a change of GPU, driver or clock policy is split), in commit order, with
    each bucket's environment. A bucket's `newest_ids` is its last line place."""
    keys = list(dict.fromkeys(environments.tolist()))
    if len(keys) <= 1:
        b = bucket_series(places, values, 0, width)
        return b, [keys[0] if keys else ""] * b.newest_ids.size
    parts = []
    for key in keys:
        mine = environments == key
        parts.append((key, bucket_series(places[mine], values[mine], 0, width)))
    newest = np.concatenate([b.newest_ids for _, b in parts])
    order = np.argsort(newest, kind="stable")
    merged = Buckets(*(np.concatenate([getattr(b, f) for _, b in parts])[order]
                       for f in ("newest_ids", "mean", "low", "high", "count")))
    envs = np.concatenate([np.full(b.newest_ids.size, key, dtype=object) for key, b in parts])[order]
    return merged, envs.tolist()
