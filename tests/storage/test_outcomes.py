"""A verdict is stored in one transaction, or not at all; what was committed comes back to be announced."""

from service_fakes import FakeOutcome, job_result
from sqlalchemy import func, select

from gate.domain import Verdict, VerdictReport
from gate.storage import claims
from gate.storage.models import Job, Notification, NoticeRecord, Repository, Revision, VerdictRecord
from gate.storage.outcomes import store_error, store_outcome


def _claimed_job(session_factory) -> tuple[int, int]:
    with session_factory() as s:
        job = Job(revision=Revision(repository=Repository(name="octo/flash", url="https://x/octo/flash.git"),
                                    sha="c" * 40, branch="main", pull_request=3), kernel="k0")
        s.add(job)
        s.commit()
        job_id = job.id
        return job_id, claims.Claims(s).claim(job_id, worker="w")


def _count(session_factory, model) -> int:  # noqa: ANN001
    with session_factory() as s:
        return s.scalar(select(func.count()).select_from(model))


def test_the_stored_verdict_comes_back_with_the_facts_and_the_report_once_committed(session_factory, tmp_path):
    job_id, attempt = _claimed_job(session_factory)
    report = VerdictReport(Verdict.REJECT, "max_latency_regression_pct over")
    with session_factory() as s:
        notice = store_outcome(s, job_id, attempt, FakeOutcome(job_result("k0"), report), tmp_path)
    assert notice.report is report                 # the value itself, not the stored JSON decoded again
    (facts,) = notice.jobs
    assert (facts.job_id, facts.kernel, facts.repo, facts.sha, facts.pull_request) == (
        job_id, "k0", "octo/flash", "c" * 40, 3)
    with session_factory() as other:                # another session sees the verdict: it is committed
        assert other.scalar(select(VerdictRecord.verdict).where(VerdictRecord.job_id == job_id)) == "reject"
    assert _count(session_factory, Notification) == 0     # storage itself announces nothing ...
    with session_factory() as s:                           # ... it keeps the notice, unhanded, for the caller
        assert s.execute(select(NoticeRecord.id, NoticeRecord.kind)).all() == [(notice.id, "verdict")]


def test_an_error_verdict_comes_back_as_error(session_factory):
    job_id, attempt = _claimed_job(session_factory)
    with session_factory() as s:
        notice = store_error(s, job_id, attempt, "the gate failed")
    assert (notice.report.verdict, notice.report.reason, notice.jobs[0].job_id) == (
        Verdict.ERROR, "the gate failed", job_id)
    assert _count(session_factory, VerdictRecord) == 1


def test_a_dropped_result_is_rolled_back_and_returns_nothing_to_announce(session_factory, tmp_path):
    job_id, attempt = _claimed_job(session_factory)
    with session_factory() as s:
        outcome = FakeOutcome(job_result("k0"), VerdictReport(Verdict.ACCEPT, "ok"))
        assert store_outcome(s, job_id, attempt + 1, outcome, tmp_path) is None
    assert _count(session_factory, VerdictRecord) == 0 and _count(session_factory, Notification) == 0
