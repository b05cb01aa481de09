"""Cancelling a revision in the database (SQLite and PostgreSQL): jobs and revision end `cancelled`.

Issue 12: "there is no cancel". Each test failed before (no cancel) and passes now.
"""

from __future__ import annotations

from service_fakes import FakeSources
from sqlalchemy import select

from gate.services.submissions import plan_revision, submit_revision
from gate.storage import claims
from gate.storage.cancellation import Cancellation
from gate.storage.models import Job, JobEvent, Notification, Revision
from gate.storage.unit import UnitOfWork


def _planned(session_factory, kernels=("fwd", "bwd")) -> int:
    with session_factory() as s:
        uow = UnitOfWork(s)
        rev_id = submit_revision(uow, repo="/src/flash", sha="HEAD")
        assert plan_revision(uow, rev_id, sources=FakeSources(kernels=kernels)).error is None
        return rev_id


def test_queued_and_running_jobs_end_cancelled_and_are_never_claimed(session_factory):
    rev_id = _planned(session_factory)
    with session_factory() as s:
        running_id, attempt = claims.Claims(s).claim_next(worker="w1")
    with session_factory() as s:
        result = Cancellation(s).cancel_revision(rev_id)
    seen = [f.job_id for f in result.notice.jobs]
    with session_factory() as s:
        rev = s.get(Revision, rev_id)
        assert (result.status, result.cancelled, rev.status) == ("cancelled", True, "cancelled")
        assert sorted(result.job_ids) == sorted(j.id for j in rev.jobs) == sorted(seen)
        assert {j.state for j in rev.jobs} == {"cancelled"} and all(j.verdict is None for j in rev.jobs)
        assert s.scalars(select(JobEvent.state).where(JobEvent.job_id == running_id)).all()[-1] == "cancelled"
        assert claims.Claims(s).claim_next(worker="w2") is None                        # queued ones never start
        assert not claims.Claims(s).heartbeat(running_id, attempt)                    # the worker learns it


def test_cancel_is_idempotent_and_a_done_revision_stays_done(session_factory):
    rev_id = _planned(session_factory, kernels=("fwd",))
    with session_factory() as s:
        assert Cancellation(s).cancel_revision(rev_id).cancelled
        again = Cancellation(s).cancel_revision(rev_id)
        assert (again.status, again.cancelled, again.job_ids) == ("cancelled", False, [])
        assert Cancellation(s).cancel_revision(10_000).status is None
        done = s.get(Revision, _planned(session_factory, kernels=("fwd",)))
        done.status = "done"
        s.commit()
        late = Cancellation(s).cancel_revision(done.id)
        assert (late.status, late.cancelled, late.finished) == ("done", False, True)
        assert s.get(Job, done.jobs[0].id).state == "queued"                  # untouched


def test_cancelled_jobs_come_back_as_facts_to_announce_and_storage_stores_no_message(session_factory):
    rev_id = _planned(session_factory, kernels=("fwd",))
    with session_factory() as s:
        result = Cancellation(s).cancel_revision(rev_id)
        assert [(f.job_id, f.kernel, f.revision_id) for f in result.notice.jobs] == [(result.job_ids[0], "fwd", rev_id)]
        assert s.scalars(select(Notification)).all() == []


def test_a_revision_cancelled_while_it_is_planned_gets_no_jobs(session_factory):
    """The planner reads git with no transaction open; a cancel meanwhile must win."""
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")

    class CancellingSources(FakeSources):
        def manifest(self, repo, sha):
            with session_factory() as other:
                assert Cancellation(other).cancel_revision(rev_id).cancelled
            return super().manifest(repo, sha)

    with session_factory() as s:
        plan = plan_revision(UnitOfWork(s), rev_id, sources=CancellingSources())
    assert plan.job_ids == []
    with session_factory() as s:
        assert s.get(Revision, rev_id).status == "cancelled"
        assert s.scalars(select(Job)).all() == []
