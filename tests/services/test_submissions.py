"""Submitting and planning: durable rows, one job per kernel, errors that name the sha or key."""

from service_fakes import SHA_A, SHA_B, FakeSources
from sqlalchemy import select

from gate.notify import Notifier
from gate.services.submissions import canonical_repo, plan_pending, plan_revision, submit, submit_revision
from gate.storage.models import Job, JobEvent, Revision, VerdictRecord
from gate.storage.unit import UnitOfWork


def test_submit_commits_before_returning(store, session_factory):
    with store.unit() as uow:
        rev_id = submit_revision(uow, repo="/src/flash", sha="HEAD", branch="main")
    with session_factory() as other:   # a separate session sees it: it is committed
        stored = other.get(Revision, rev_id)
        assert (stored.sha, stored.status, stored.repository.url) == ("HEAD", "queued", "/src/flash")


def test_same_repository_url_is_stored_once(store, session_factory):
    with store.unit() as uow:
        a_id = submit_revision(uow, repo="https://github.com/org/flash.git", sha=SHA_A)
        b_id = submit_revision(uow, repo="https://github.com/org/flash.git", sha=SHA_B)
    with session_factory() as s:
        a, b = s.get(Revision, a_id), s.get(Revision, b_id)
        assert a.repository_id == b.repository_id
        assert a.repository.name == "org/flash"


def test_plan_creates_one_queued_job_per_kernel_and_notifies(store, session_factory):
    seen = []

    class Listener:
        def jobs_queued(self, jobs):
            seen.extend(j.kernel for j in jobs)
            return []

        def verdict(self, job, report):
            return []

    with store.unit() as uow:
        rev_id = submit_revision(uow, repo="/src/flash", sha="HEAD")
        plan = plan_revision(uow, rev_id, sources=FakeSources(kernels=("fwd", "bwd")), notifier=Notifier([Listener()]))
    assert plan.error is None and seen == ["fwd", "bwd"]
    with session_factory() as s:
        rev = s.get(Revision, rev_id)
        assert rev.sha == SHA_B and rev.parent_sha == SHA_A and rev.base_sha == SHA_A
        assert rev.committed_at.hour == 2            # stored as naive UTC
        assert [(j.kernel, j.state) for j in rev.jobs] == [("fwd", "queued"), ("bwd", "queued")]
        assert s.scalars(select(JobEvent.state).where(JobEvent.job_id == rev.jobs[0].id)).all() == ["queued"]


def test_unknown_sha_ends_the_revision_with_an_error_naming_it(store, session_factory, tmp_path):
    with store.unit() as uow:
        rev_id = submit_revision(uow, repo=str(tmp_path), sha="deadbeef")
        plan = plan_revision(uow, rev_id, sources=FakeSources())
    assert plan.field == "sha" and "deadbeef" in plan.error
    with session_factory() as s:
        rev = s.get(Revision, rev_id)
        assert rev.status == "done" and "deadbeef" in rev.error and rev.jobs == []


def test_bad_manifest_error_names_the_key(store):
    with store.unit() as uow:
        rev_id = submit_revision(uow, repo="/src/flash", sha="HEAD")
        plan = plan_revision(uow, rev_id, sources=FakeSources(bad_manifest={SHA_B}))
    assert "kernel[0].colour" in plan.error and "gate.toml" in plan.error


def test_requested_kernel_missing_from_manifest_is_an_error(store):
    with store.unit() as uow:
        rev_id = submit_revision(uow, repo="/src/flash", sha="HEAD", kernels=["nope"])
        plan = plan_revision(uow, rev_id, sources=FakeSources(kernels=("fwd",)))
    assert plan.field == "kernels" and "nope" in plan.error


def _planned(store, sources, **submission) -> int:  # noqa: ANN001
    with store.unit() as uow:
        rev_id = submit_revision(uow, repo="/src/flash", **submission)
        assert plan_revision(uow, rev_id, sources=sources).error is None
    return rev_id


def test_baseline_is_the_last_fully_accepted_revision_of_the_default_branch(store, session_factory):
    sources = FakeSources(refs={"c1": "1" * 40, "c2": "2" * 40, "c3": "3" * 40})
    for ref, verdict in (("c1", "accept"), ("c2", "reject")):
        rev_id = _planned(store, sources, sha=ref, branch="main")
        with session_factory() as s:
            rev = s.get(Revision, rev_id)
            (job,) = rev.jobs
            job.state, rev.status = "done", "done"
            s.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel="attn", gpu_kind="g",
                                verdict=verdict, reason="", rules=[]))
            s.commit()
    c3 = _planned(store, sources, sha="c3", branch="feature")
    explicit = _planned(store, sources, sha="c3", base_sha="c2")
    with session_factory() as s:
        assert s.get(Revision, c3).base_sha == "1" * 40   # c2 was rejected: not a baseline
        assert s.get(Revision, explicit).base_sha == "2" * 40


def test_parent_is_the_baseline_without_accepted_history(store, session_factory):
    rev_id = _planned(store, FakeSources(), sha="HEAD", branch="main")
    with session_factory() as s:
        assert s.get(Revision, rev_id).base_sha == SHA_A


def test_plan_pending_plans_revisions_left_without_jobs(store, session_factory):
    with store.unit() as uow:
        left = submit_revision(uow, repo="/src/flash", sha="HEAD")
    assert plan_pending(store, sources=FakeSources()) == [left]
    assert plan_pending(store, sources=FakeSources()) == []
    with session_factory() as s:
        assert len(s.scalars(select(Job).where(Job.revision_id == left)).all()) == 1


def test_local_paths_are_made_absolute():
    url, name = canonical_repo("./some/flash")
    assert url.startswith("/") and name == "flash"


def test_planning_reads_git_with_no_database_transaction_open(session_factory):
    """Issue 12: clones that hung held pooled connections until the pool ran dry."""
    seen = []

    class WatchingSources(FakeSources):
        def resolve(self, repo, rev):
            seen.append(session.in_transaction())
            return super().resolve(repo, rev)

        def manifest(self, repo, sha):
            seen.append(session.in_transaction())
            return super().manifest(repo, sha)

    with session_factory() as session:
        uow = UnitOfWork(session)
        rev_id = submit_revision(uow, repo="/src/flash", sha="HEAD", base_sha=SHA_A)
        session.get(Revision, rev_id)          # a row read before planning: the read must not stay open
        plan = plan_revision(uow, rev_id, sources=WatchingSources())
    assert plan.error is None and len(plan.job_ids) == 1
    assert seen == [False, False, False]


def test_identical_submission_while_queued_returns_it_and_force_stores_another(store):
    """Issue 12: 500 POSTs of one sha stored 488 identical revisions. Failed before (a new
    revision each time), passes now."""
    same = dict(repo="/src/flash", sha=SHA_B, base_sha=SHA_A, kernels=["fwd", "bwd"])
    with store.unit() as uow:
        first = submit(uow, **same)
        again = submit(uow, **{**same, "kernels": ["bwd", "fwd", "bwd"]})   # the same set of kernels
        forced = submit(uow, **same, force=True)
        other_base = submit(uow, **{**same, "base_sha": None})
    assert (first.reused, again.reused, forced.reused, other_base.reused) == (False, True, False, False)
    assert again.revision_id == first.revision_id
    assert len({first.revision_id, forced.revision_id, other_base.revision_id}) == 3


def test_a_finished_revision_is_not_reused(store, session_factory):
    with store.unit() as uow:
        first = submit(uow, repo="/src/flash", sha=SHA_B).revision_id
    with session_factory() as s:
        s.get(Revision, first).status = "done"
        s.commit()
    with store.unit() as uow:
        again = submit(uow, repo="/src/flash", sha=SHA_B)
    assert not again.reused and again.revision_id != first


def test_a_ref_is_never_reused_it_may_have_moved(store):
    with store.unit() as uow:
        first = submit(uow, repo="/src/flash", sha="main")
        again = submit(uow, repo="/src/flash", sha="main")
        short = submit(uow, repo="/src/flash", sha=SHA_B, base_sha="main")
    assert not again.reused and not short.reused
    assert len({first.revision_id, again.revision_id, short.revision_id}) == 3


class _Exploding(FakeSources):
    """A reader whose manifest read raises what no planner expects, for one repository."""

    def manifest(self, repo: str, sha: str):  # noqa: ANN201
        if repo.endswith("bad"):
            raise RecursionError("maximum recursion depth exceeded")
        return super().manifest(repo, sha)


def test_a_revision_whose_planning_raises_ends_error_and_the_others_are_still_planned(store, session_factory):
    """Issue 24: such a revision stayed queued, and start-up planned it again, and failed, every time."""
    with store.unit() as uow:
        bad = submit_revision(uow, repo="/src/bad", sha="HEAD")
        good = submit_revision(uow, repo="/src/flash", sha="HEAD")
    assert plan_pending(store, sources=_Exploding()) == [bad, good]
    with session_factory() as s:
        failed, planned = s.get(Revision, bad), s.get(Revision, good)
        assert failed.status == "done" and "planning failed (RecursionError)" in failed.error and not failed.jobs
        assert planned.error is None and len(planned.jobs) == 1
    assert plan_pending(store, sources=_Exploding()) == []       # nothing left for the next start
