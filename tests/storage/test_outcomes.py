"""A verdict and the deliveries made of it are stored in one transaction, or not at all."""

from service_fakes import FakeOutcome, job_result
from sqlalchemy import func, select

from gate.domain import Verdict, VerdictReport
from gate.domain.notices import Delivery, JobFacts
from gate.storage import claims
from gate.storage.models import Job, Notification, Repository, Revision, VerdictRecord
from gate.storage.outcomes import store_error, store_outcome


def _claimed_job(session_factory) -> tuple[int, int]:
    with session_factory() as s:
        job = Job(revision=Revision(repository=Repository(name="octo/flash", url="https://x/octo/flash.git"),
                                    sha="c" * 40, branch="main", pull_request=3), kernel="k0")
        s.add(job)
        s.commit()
        job_id = job.id
        return job_id, claims.claim_job(s, job_id, worker="w")


def _count(session_factory, model) -> int:  # noqa: ANN001
    with session_factory() as s:
        return s.scalar(select(func.count()).select_from(model))


def test_deliveries_are_stored_with_the_verdict_from_the_facts_and_the_report(session_factory, tmp_path):
    job_id, attempt = _claimed_job(session_factory)
    report = VerdictReport(Verdict.REJECT, "max_latency_regression_pct over")
    seen: list[tuple[JobFacts, VerdictReport]] = []

    def notices(job: JobFacts, got: VerdictReport) -> list[Delivery]:
        seen.append((job, got))
        return [Delivery(target="webhook", url="http://hook", payload={"body": {"v": got.verdict.value}},
                         job_id=job.job_id)]

    with session_factory() as s:
        assert store_outcome(s, job_id, attempt, FakeOutcome(job_result("k0"), report), tmp_path, notices)
    ((facts, got),) = seen
    assert got is report                     # the value itself, not the stored JSON decoded again
    assert (facts.job_id, facts.kernel, facts.repo, facts.sha, facts.pull_request) == (
        job_id, "k0", "octo/flash", "c" * 40, 3)
    with session_factory() as s:
        (row,) = s.scalars(select(Notification)).all()
        assert (row.job_id, row.target, row.state, row.payload) == (job_id, "webhook", "pending",
                                                                    {"body": {"v": "reject"}})


def test_a_failing_listener_loses_no_verdict(session_factory):
    job_id, attempt = _claimed_job(session_factory)

    def broken(job: JobFacts, report: VerdictReport) -> list[Delivery]:
        raise RuntimeError("listener bug")

    with session_factory() as s:
        assert store_error(s, job_id, attempt, "the gate failed", broken)
    assert _count(session_factory, VerdictRecord) == 1
    assert _count(session_factory, Notification) == 0


def test_a_dropped_result_makes_no_deliveries(session_factory, tmp_path):
    job_id, attempt = _claimed_job(session_factory)
    calls = []
    with session_factory() as s:
        outcome = FakeOutcome(job_result("k0"), VerdictReport(Verdict.ACCEPT, "ok"))
        assert not store_outcome(s, job_id, attempt + 1, outcome, tmp_path, lambda j, r: calls.append(j) or [])
    assert calls == [] and _count(session_factory, Notification) == 0
