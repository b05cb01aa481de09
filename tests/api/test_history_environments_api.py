"""`GET /api/v1/kernels/{name}/history` per environment: each point's environment, no change point
where only the environment moved, and a change found in kilocycles says so (SQLite and PostgreSQL)."""

from __future__ import annotations

import numpy as np

from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import Job, Metric, Repository, Revision, VerdictRecord

A, B = "NVIDIA H200 | driver 570.86 | clocks observe", "NVIDIA H200 | driver 575.10 | clocks observe"


def _seed(database_url, points):   # points: (µs, kcycles or None, environment)
    engine = make_engine(database_url)
    with make_session_factory(engine)() as s:
        repo = Repository(name="r", url="/r")
        for i, (us, kc, env) in enumerate(points):
            rev = Revision(repository=repo, sha=f"{i:040x}", message=f"c{i}")
            s.add(rev)
            s.flush()
            job = Job(revision_id=rev.id, kernel="k", gpu_kind="NVIDIA H200", state="done")
            s.add(job)
            s.flush()
            for name, value, unit in (("latency_median_us", us, "us"), ("latency_median_kcycles", kc, "kcycles")):
                if value is not None:
                    s.add(Metric(revision_id=rev.id, job_id=job.id, kernel="k", gpu_kind="NVIDIA H200", shape="s",
                                 name=name, series="candidate", value=value, unit=unit, environment=env))
            s.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel="k", gpu_kind="NVIDIA H200",
                                verdict="accept", reason="r", rules=[]))
        s.commit()
    engine.dispose()


def _history(make_client):
    body = make_client(embedded_executor=False).get("/api/v1/kernels/k/history",
                                                    params={"metric": "latency_median_us"}).json()
    (series,) = body["series"]
    return series


def test_a_move_of_environment_is_not_a_change_point(make_client, database_url):
    rng = np.random.default_rng(1)
    _seed(database_url, [(457 * (1 + 0.002 * rng.standard_normal()), None, A) for _ in range(12)]
          + [(597 * (1 + 0.002 * rng.standard_normal()), None, B) for _ in range(12)])
    series = _history(make_client)
    assert series["environments"] == [A] * 12 + [B] * 12
    assert series["change_points"] == []


def test_clocks_that_moved_within_one_environment_are_compared_in_kilocycles(make_client, database_url):
    rng = np.random.default_rng(2)
    mhz = [1980.0] * 10 + [1755.0] * 10 + [1755.0] * 10
    work = [900.0] * 20 + [1080.0] * 10                  # kilocycles: the kernel got 20 % slower at 20
    points = []
    for m, kc in zip(mhz, work):
        us = kc * 1000 / m * (1 + 0.001 * rng.standard_normal())
        points.append((us, us * m / 1000, A))
    _seed(database_url, points)
    series = _history(make_client)
    assert [(c["x"], c["basis"]) for c in series["change_points"]] == [(20, "kcycles")]
    assert series["change_points"][0]["shift_pct"] > 15
