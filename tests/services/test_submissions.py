"""Submitting and planning: durable rows, one job per kernel, errors that name the sha or key."""

from service_fakes import SHA_A, SHA_B, FakeSources
from sqlalchemy import select

from gate.notify import Notifier
from gate.services.submissions import canonical_repo, plan_pending, plan_revision, submit, submit_revision
from gate.storage.models import Job, JobEvent, Revision, VerdictRecord


def test_submit_commits_before_returning(session_factory):
    with session_factory() as s:
        rev = submit_revision(s, repo="/src/flash", sha="HEAD", branch="main")
    with session_factory() as other:   # a separate session sees it: it is committed
        stored = other.get(Revision, rev.id)
        assert (stored.sha, stored.status, stored.repository.url) == ("HEAD", "queued", "/src/flash")


def test_same_repository_url_is_stored_once(session_factory):
    with session_factory() as s:
        a = submit_revision(s, repo="https://github.com/org/flash.git", sha=SHA_A)
        b = submit_revision(s, repo="https://github.com/org/flash.git", sha=SHA_B)
        assert a.repository_id == b.repository_id
        assert a.repository.name == "org/flash"


def test_plan_creates_one_queued_job_per_kernel_and_notifies(session_factory):
    seen = []

    class Listener:
        def jobs_queued(self, jobs):
            seen.extend(j.kernel for j in jobs)
            return []

        def verdict(self, job, report):
            return []

    with session_factory() as s:
        rev = submit_revision(s, repo="/src/flash", sha="HEAD")
        plan = plan_revision(s, rev, sources=FakeSources(kernels=("fwd", "bwd")), notifier=Notifier([Listener()]))
    assert plan.error is None and seen == ["fwd", "bwd"]
    with session_factory() as s:
        rev = s.get(Revision, rev.id)
        assert rev.sha == SHA_B and rev.parent_sha == SHA_A and rev.base_sha == SHA_A
        assert rev.committed_at.hour == 2            # stored as naive UTC
        assert [(j.kernel, j.state) for j in rev.jobs] == [("fwd", "queued"), ("bwd", "queued")]
        assert s.scalars(select(JobEvent.state).where(JobEvent.job_id == rev.jobs[0].id)).all() == ["queued"]


def test_unknown_sha_ends_the_revision_with_an_error_naming_it(session_factory, tmp_path):
    with session_factory() as s:
        rev = submit_revision(s, repo=str(tmp_path), sha="deadbeef")
        plan = plan_revision(s, rev, sources=FakeSources())
    assert plan.field == "sha" and "deadbeef" in plan.error
    with session_factory() as s:
        rev = s.get(Revision, rev.id)
        assert rev.status == "done" and "deadbeef" in rev.error and rev.jobs == []


def test_bad_manifest_error_names_the_key(session_factory):
    with session_factory() as s:
        rev = submit_revision(s, repo="/src/flash", sha="HEAD")
        plan = plan_revision(s, rev, sources=FakeSources(bad_manifest={SHA_B}))
    assert "kernel[0].colour" in plan.error and "gate.toml" in plan.error


def test_requested_kernel_missing_from_manifest_is_an_error(session_factory):
    with session_factory() as s:
        rev = submit_revision(s, repo="/src/flash", sha="HEAD", kernels=["nope"])
        plan = plan_revision(s, rev, sources=FakeSources(kernels=("fwd",)))
    assert plan.field == "kernels" and "nope" in plan.error


def test_baseline_is_the_last_fully_accepted_revision_of_the_default_branch(session_factory):
    sources = FakeSources(refs={"c1": "1" * 40, "c2": "2" * 40, "c3": "3" * 40})
    with session_factory() as s:
        ids = []
        for ref, verdict in (("c1", "accept"), ("c2", "reject")):
            rev = submit_revision(s, repo="/src/flash", sha=ref, branch="main")
            (job,) = plan_revision(s, rev, sources=sources).jobs
            job.state, rev.status = "done", "done"
            s.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel="attn", gpu_kind="g",
                                verdict=verdict, reason="", rules=[]))
            s.commit()
            ids.append(rev.id)
        c3 = submit_revision(s, repo="/src/flash", sha="c3", branch="feature")
        plan_revision(s, c3, sources=sources)
        assert c3.base_sha == "1" * 40   # c2 was rejected: not a baseline
        explicit = submit_revision(s, repo="/src/flash", sha="c3", base_sha="c2")
        plan_revision(s, explicit, sources=sources)
        assert explicit.base_sha == "2" * 40


def test_parent_is_the_baseline_without_accepted_history(session_factory):
    with session_factory() as s:
        rev = submit_revision(s, repo="/src/flash", sha="HEAD", branch="main")
        plan_revision(s, rev, sources=FakeSources())
        assert rev.base_sha == SHA_A


def test_plan_pending_plans_revisions_left_without_jobs(session_factory):
    with session_factory() as s:
        left = submit_revision(s, repo="/src/flash", sha="HEAD").id
    assert plan_pending(session_factory, sources=FakeSources()) == [left]
    assert plan_pending(session_factory, sources=FakeSources()) == []
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
        rev = submit_revision(session, repo="/src/flash", sha="HEAD", base_sha=SHA_A)
        rev = session.get(Revision, rev.id)
        plan = plan_revision(session, rev, sources=WatchingSources())
    assert plan.error is None and len(plan.jobs) == 1
    assert seen == [False, False, False]


def test_identical_submission_while_queued_returns_it_and_force_stores_another(session_factory):
    """Issue 12: 500 POSTs of one sha stored 488 identical revisions. Failed before (a new
    revision each time), passes now."""
    same = dict(repo="/src/flash", sha=SHA_B, base_sha=SHA_A, kernels=["fwd", "bwd"])
    with session_factory() as s:
        first = submit(s, **same)
        again = submit(s, **{**same, "kernels": ["bwd", "fwd", "bwd"]})   # the same set of kernels
        forced = submit(s, **same, force=True)
        other_base = submit(s, **{**same, "base_sha": None})
    assert (first.reused, again.reused, forced.reused, other_base.reused) == (False, True, False, False)
    assert again.revision.id == first.revision.id
    assert len({first.revision.id, forced.revision.id, other_base.revision.id}) == 3


def test_a_finished_revision_is_not_reused(session_factory):
    with session_factory() as s:
        first = submit(s, repo="/src/flash", sha=SHA_B).revision
        first.status = "done"
        s.commit()
        again = submit(s, repo="/src/flash", sha=SHA_B)
    assert not again.reused and again.revision.id != first.id


def test_a_ref_is_never_reused_it_may_have_moved(session_factory):
    with session_factory() as s:
        first = submit(s, repo="/src/flash", sha="main")
        again = submit(s, repo="/src/flash", sha="main")
        short = submit(s, repo="/src/flash", sha=SHA_B, base_sha="main")
    assert not again.reused and not short.reused
    assert len({first.revision.id, again.revision.id, short.revision.id}) == 3


class _Exploding(FakeSources):
    """A reader whose manifest read raises what no planner expects, for one repository."""

    def manifest(self, repo: str, sha: str):  # noqa: ANN201
        if repo.endswith("bad"):
            raise RecursionError("maximum recursion depth exceeded")
        return super().manifest(repo, sha)


def test_a_revision_whose_planning_raises_ends_error_and_the_others_are_still_planned(session_factory):
    """Issue 24: such a revision stayed queued, and start-up planned it again, and failed, every time."""
    with session_factory() as s:
        bad = submit_revision(s, repo="/src/bad", sha="HEAD").id
        good = submit_revision(s, repo="/src/flash", sha="HEAD").id
    assert plan_pending(session_factory, sources=_Exploding()) == [bad, good]
    with session_factory() as s:
        failed, planned = s.get(Revision, bad), s.get(Revision, good)
        assert failed.status == "done" and "planning failed (RecursionError)" in failed.error and not failed.jobs
        assert planned.error is None and len(planned.jobs) == 1
    assert plan_pending(session_factory, sources=_Exploding()) == []       # nothing left for the next start
