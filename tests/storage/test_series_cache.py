"""The in-process history: new verdicts are read incrementally, a late one forces a full read."""

from __future__ import annotations

from gate.read_models.kernel_series import history_points
from gate.storage.kernel_series import KernelSeries
from gate.storage.series_cache import SeriesCache
from gate.storage.models import Job, Metric, Repository, Revision, VerdictRecord

KERNEL, GPU = "k", "NVIDIA H100"
TRACE = ("latency_median_us", "s1", "candidate")


def _revisions(session_factory, n: int) -> list[int]:  # noqa: ANN001
    with session_factory() as s:
        repo = Repository(name="r", url="/r")
        revs = [Revision(repository=repo, sha=f"{i:040x}", message=f"commit {i}\nbody")
                for i in range(n)]
        s.add_all(revs)
        s.commit()
        return [r.id for r in revs]


def _judge(session_factory, rev_id: int, value: float, verdict: str = "accept",  # noqa: ANN001
           with_verdict: bool = True) -> None:
    with session_factory() as s:
        job = Job(revision_id=rev_id, kernel=KERNEL, gpu_kind=GPU, state="done")
        s.add(job)
        s.flush()
        s.add(Metric(revision_id=rev_id, job_id=job.id, kernel=KERNEL, gpu_kind=GPU, shape="s1",
                     name=TRACE[0], series=TRACE[2], value=value, unit="us"))
        if with_verdict:
            s.add(VerdictRecord(job_id=job.id, revision_id=rev_id, kernel=KERNEL, gpu_kind=GPU,
                                verdict=verdict, reason="r", rules=[]))
        s.commit()


def _held(session_factory, store: SeriesCache):  # noqa: ANN001, ANN202
    with session_factory() as s:
        return store.history(s.connection(), KERNEL, GPU, [TRACE])


def test_a_new_verdict_is_read_without_reading_everything_again(session_factory):  # noqa: ANN001
    ids = _revisions(session_factory, 3)
    _judge(session_factory, ids[0], 1.0)
    store = SeriesCache()
    assert _held(session_factory, store).traces[TRACE].values.tolist() == [1.0]
    _judge(session_factory, ids[1], 2.0, "reject")
    held = _held(session_factory, store)
    assert held.revision_ids.tolist() == ids[:2]
    assert held.traces[TRACE].values.tolist() == [1.0, 2.0]
    assert [held.verdicts[c] for c in held.verdict_codes] == ["accept", "reject"]
    assert held.traces[TRACE].unit == "us"
    assert store.full_reads == 1


def test_a_late_verdict_below_the_newest_held_reads_everything_again(session_factory):  # noqa: ANN001
    ids = _revisions(session_factory, 3)
    _judge(session_factory, ids[0], 1.0)
    _judge(session_factory, ids[2], 3.0)
    store = SeriesCache()
    _held(session_factory, store)
    _judge(session_factory, ids[1], 2.0)
    held = _held(session_factory, store)
    assert held.revision_ids.tolist() == ids
    assert held.traces[TRACE].values.tolist() == [1.0, 2.0, 3.0]
    assert store.full_reads == 2


def test_metrics_without_a_stored_verdict_are_not_held(session_factory):  # noqa: ANN001
    ids = _revisions(session_factory, 2)
    _judge(session_factory, ids[0], 1.0)
    _judge(session_factory, ids[1], 9.0, with_verdict=False)
    assert _held(session_factory, SeriesCache()).traces[TRACE].values.tolist() == [1.0]


def test_kernel_history_from_a_store_matches_a_fresh_read(session_factory):  # noqa: ANN001
    ids = _revisions(session_factory, 30)
    store = SeriesCache()
    for i, rev_id in enumerate(ids):
        _judge(session_factory, rev_id, float(i), "reject" if i == 7 else "accept")
        if i % 10 == 0:
            with session_factory() as s:
                KernelSeries(s).history(KERNEL, GPU, [TRACE], max_points=10, cache=store)
    with session_factory() as s:
        held = KernelSeries(s).history(KERNEL, GPU, [TRACE], max_points=10, cache=store)
        fresh = KernelSeries(s).history(KERNEL, GPU, [TRACE], max_points=10)
    points = history_points(held.series[0], held.details)
    assert points == history_points(fresh.series[0], fresh.details)
    assert (held.revisions, held.bucket_revisions) == (fresh.revisions, fresh.bucket_revisions)
    assert held.bucket_revisions == 3 and len(points) == 10
    assert (points[2].value, points[2].low, points[2].high, points[2].count) == (7.0, 6.0, 8.0, 3)
    assert (points[2].verdict, points[2].revision_id, points[2].x) == ("reject", ids[8], 8)
    assert points[2].message == "commit 8"


def _place(session_factory, rev_id: int, position: int | None, on_branch: bool | None = True,  # noqa: ANN001
           pull_request: int | None = None) -> None:
    with session_factory() as s:
        rev = s.get(Revision, rev_id)
        rev.position, rev.on_branch, rev.pull_request = position, on_branch, pull_request
        s.commit()


def test_an_ancestor_judged_late_is_drawn_in_its_place_without_a_full_read(session_factory):  # noqa: ANN001
    """Issue 45: HEAD (depth 3) judged first, its ancestors after: the line is 1, 2, 3 in depth."""
    ids = _revisions(session_factory, 3)
    for rev_id, depth in zip(ids, (3, 1, 2)):
        _place(session_factory, rev_id, depth)
    store = SeriesCache()
    _judge(session_factory, ids[0], 40.0)
    with session_factory() as s:
        KernelSeries(s).history(KERNEL, GPU, [TRACE], cache=store)
    _judge(session_factory, ids[1], 29.0)
    _judge(session_factory, ids[2], 30.0)
    with session_factory() as s:
        (series,) = KernelSeries(s).history(KERNEL, GPU, [TRACE], cache=store).series
    assert series.revision_ids.tolist() == [ids[1], ids[2], ids[0]]
    assert series.value.tolist() == [29.0, 30.0, 40.0] and series.x.tolist() == [0, 1, 2]
    assert store.full_reads == 1


def test_a_pull_request_is_apart_from_the_line_and_old_rows_fall_back_to_it(session_factory):  # noqa: ANN001
    ids = _revisions(session_factory, 3)
    _place(session_factory, ids[1], None, on_branch=None, pull_request=7)   # planned before places were kept
    _place(session_factory, ids[2], 2, on_branch=False)                     # another branch
    for rev_id, value in zip(ids, (1.0, 2.0, 3.0)):
        _judge(session_factory, rev_id, value)
    with session_factory() as s:
        hist = KernelSeries(s).history(KERNEL, GPU, [TRACE])
    (line,), (apart,) = hist.series, hist.off_branch
    assert line.revision_ids.tolist() == [ids[0]] and line.value.tolist() == [1.0]
    assert apart.revision_ids.tolist() == [ids[1], ids[2]] and apart.value.tolist() == [2.0, 3.0]
    assert [p.sha for p in history_points(apart, hist.details)] == [f"{1:040x}", f"{2:040x}"]
