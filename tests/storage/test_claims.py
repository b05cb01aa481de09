"""Claims are atomic; orphaned jobs are re-queued; a late result from a dead attempt is dropped."""

from datetime import timedelta

from service_fakes import FakeOutcome, job_result
from sqlalchemy import func, select

from gate.domain import Verdict, VerdictReport
from gate.storage import claims
from gate.storage.models import Job, JobEvent, JobState, Metric, Repository, Revision, VerdictRecord, utcnow
from gate.storage.outcomes import store_error, store_outcome


def _jobs(session_factory, n=1):
    with session_factory() as s:
        rev = Revision(repository=Repository(name="r", url="/r"), sha="b" * 40)
        jobs = [Job(revision=rev, kernel=f"k{i}") for i in range(n)]
        s.add_all(jobs)
        s.commit()
        return [j.id for j in jobs]


def test_a_job_is_claimed_only_once(session_factory):
    (job_id,) = _jobs(session_factory)
    with session_factory() as s:
        assert claims.Claims(s).claim(job_id, worker="w1") == 1
    with session_factory() as s:
        assert claims.Claims(s).claim(job_id, worker="w2") is None
        job = s.get(Job, job_id)
        assert (job.state, job.worker, job.attempts) == (JobState.RUNNING, "w1", 1)
        assert s.get(Revision, job.revision_id).status == "running"


def test_claim_next_takes_the_oldest_job_of_a_served_kind(session_factory):
    a, b = _jobs(session_factory, 2)
    with session_factory() as s:
        s.get(Job, a).gpu_kind = "NVIDIA H100"
        s.commit()
    with session_factory() as s:
        assert claims.Claims(s).claim_next(worker="w", gpu_kinds=["any"]) == (b, 1)
        assert claims.Claims(s).claim_next(worker="w", gpu_kinds=["any"]) is None
        assert claims.Claims(s).claim_next(worker="w", gpu_kinds=["NVIDIA H100"]) == (a, 1)


def test_requeue_takes_back_only_this_executors_or_stale_jobs(session_factory):
    mine, other, stale = _jobs(session_factory, 3)
    with session_factory() as s:
        claims.Claims(s).claim(mine, worker="local@h/serve:cpu")
        claims.Claims(s).claim(other, worker="celery@gpu2")
        claims.Claims(s).claim(stale, worker="celery@gpu3")
        s.get(Job, stale).heartbeat_at = utcnow() - timedelta(minutes=10)
        s.commit()
    with session_factory() as s:
        assert sorted(claims.Claims(s).requeue_orphans(worker_prefix="local@h/serve:")) == [mine, stale]
        events = s.scalars(select(JobEvent.detail).where(JobEvent.job_id == mine, JobEvent.state == "requeued"))
        assert [e.split(": ", 1)[1] for e in events] == ["its worker is gone"]
        assert s.get(Job, other).state == JobState.RUNNING


def test_result_of_a_superseded_attempt_is_dropped(session_factory, tmp_path):
    (job_id,) = _jobs(session_factory)
    with session_factory() as s:
        first = claims.Claims(s).claim(job_id, worker="w1")
        claims.Claims(s).requeue_orphans(worker_prefix="w1")
        second = claims.Claims(s).claim(job_id, worker="w2")
    outcome = FakeOutcome(job_result("k0"), VerdictReport(Verdict.ACCEPT, "ok"))
    with session_factory() as s:
        assert claims.Claims(s).heartbeat(job_id, first) is False
        assert store_outcome(s, job_id, first, outcome, tmp_path) is None
    with session_factory() as s:
        assert store_outcome(s, job_id, second, outcome, tmp_path) is not None
        assert store_error(s, job_id, second, "late") is None
    with session_factory() as s:
        assert s.scalar(select(func.count()).select_from(VerdictRecord)) == 1
        assert s.scalar(select(func.count()).select_from(Metric).where(Metric.job_id == job_id)) > 0
        job = s.get(Job, job_id)
        assert (job.state, job.attempts) == (JobState.DONE, 2)
        assert s.get(Revision, job.revision_id).status == "done"
