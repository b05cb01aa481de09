"""History per environment key, on SQLite and PostgreSQL: each point carries its environment, a
bucket never mixes two, and a refresh keeps them (issue 14)."""

from __future__ import annotations

from gate.storage.kernel_series import KernelSeries
from gate.storage.models import Job, Metric, Repository, Revision, VerdictRecord
from gate.storage.series_cache import SeriesCache

KERNEL, GPU = "k", "NVIDIA H200"
TRACE = ("latency_median_us", "s1", "candidate")
H200_OBSERVE = "NVIDIA H200 | driver 570.86 | clocks observe"
H200_LOCK = "NVIDIA H200 | driver 570.86 | clocks lock"


def _judge_all(session_factory, rows: list[tuple[float, str]]) -> list[int]:  # noqa: ANN001
    with session_factory() as s:
        repo = Repository(name="r", url="/r")
        revs = [Revision(repository=repo, sha=f"{i:040x}", message=f"c{i}") for i in range(len(rows))]
        s.add_all(revs)
        s.flush()
        for rev, (value, env) in zip(revs, rows):
            job = Job(revision_id=rev.id, kernel=KERNEL, gpu_kind=GPU, state="done")
            s.add(job)
            s.flush()
            s.add(Metric(revision_id=rev.id, job_id=job.id, kernel=KERNEL, gpu_kind=GPU, shape="s1",
                         name=TRACE[0], series=TRACE[2], value=value, unit="us", environment=env))
            s.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel=KERNEL, gpu_kind=GPU,
                                verdict="accept", reason="r", rules=[]))
        s.commit()
        return [r.id for r in revs]


def _history(session_factory, store, max_points=2000):  # noqa: ANN001, ANN202
    with session_factory() as s:
        return KernelSeries(s).history(KERNEL, GPU, [TRACE], max_points=max_points, cache=store)


def test_each_point_carries_its_environment_and_a_refresh_keeps_them(session_factory):  # noqa: ANN001
    store = SeriesCache()
    _judge_all(session_factory, [(457.0, ""), (597.0, H200_OBSERVE)])
    s = _history(session_factory, store).series[0]
    assert s.value.tolist() == [457.0, 597.0]
    assert s.environments == ["", H200_OBSERVE]
    with session_factory() as sess:                      # one more verdict: read incrementally
        rev = Revision(repository_id=1, sha="f" * 40, message="new")
        sess.add(rev)
        sess.flush()
        job = Job(revision_id=rev.id, kernel=KERNEL, gpu_kind=GPU, state="done")
        sess.add(job)
        sess.flush()
        sess.add(Metric(revision_id=rev.id, job_id=job.id, kernel=KERNEL, gpu_kind=GPU, shape="s1",
                        name=TRACE[0], series=TRACE[2], value=1.0, unit="us", environment=H200_LOCK))
        sess.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel=KERNEL, gpu_kind=GPU,
                               verdict="accept", reason="r", rules=[]))
        sess.commit()
    s = _history(session_factory, store).series[0]
    assert s.environments == ["", H200_OBSERVE, H200_LOCK] and store.full_reads == 1


def test_a_bucket_never_averages_two_environments(session_factory):  # noqa: ANN001
    # Alternating environments, 40 revisions, 10 points wanted: buckets of 4 revisions, each split in two.
    rows = [(100.0, H200_OBSERVE) if i % 2 else (200.0, H200_LOCK) for i in range(40)]
    _judge_all(session_factory, rows)
    s = _history(session_factory, SeriesCache(), max_points=10).series[0]
    by_env = {}
    for value, low, high, env in zip(s.value.tolist(), s.low.tolist(), s.high.tolist(), s.environments):
        by_env.setdefault(env, set()).update({value, low, high})
    assert by_env == {H200_OBSERVE: {100.0}, H200_LOCK: {200.0}}
    assert int(s.count.sum()) == 40
    assert s.revision_ids.tolist() == sorted(s.revision_ids.tolist())
