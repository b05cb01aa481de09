"""notify hears of a verdict only once the verdict's transaction committed, and only through the
notifier the worker was composed with: a verdict rolled back is never announced."""

from __future__ import annotations

from service_fakes import FakePipeline, FakeSources
from sqlalchemy import event, func, select
from sqlalchemy.orm import Session

from gate.domain.job import RunOptions
from gate.domain.notices import Delivery
from gate.executors.base import JobEnvironment, run_claimed
from gate.notify import Notifier
from gate.services.submissions import plan_revision, submit_revision
from gate.storage.unit import UnitOfWork
from gate.storage import claims
from gate.storage.models import Notification, NoticeRecord, Revision, VerdictRecord
from gate.storage.unit import Store


class Recording:
    """A listener that notes what it heard and what another session could see at that moment."""

    def __init__(self, session_factory):  # noqa: ANN001
        self.session_factory = session_factory
        self.heard: list[tuple[int, str, str | None]] = []    # (job, verdict heard, verdict committed)

    def jobs_queued(self, jobs):  # noqa: ANN001, ANN201
        return []

    def verdict(self, job, report):  # noqa: ANN001, ANN201
        with self.session_factory() as other:
            committed = other.scalar(select(VerdictRecord.verdict).where(VerdictRecord.job_id == job.job_id))
        self.heard.append((job.job_id, report.verdict.value, committed))
        return [Delivery("webhook", "http://hook", {"body": {"v": report.verdict.value}}, job.job_id)]

    def cancelled(self, jobs):  # noqa: ANN001, ANN201
        return []


def _claimed(session_factory, worker: str = "w1") -> tuple[int, int]:  # noqa: ANN001
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")
        (job_id,) = plan_revision(UnitOfWork(s), rev_id, sources=FakeSources(kernels=("attn",))).job_ids
        return job_id, claims.Claims(s).claim(job_id, worker=worker)


def _env(session_factory, tmp_path, pipeline, listener) -> JobEnvironment:  # noqa: ANN001
    return JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=pipeline, data_dir=tmp_path / "data",
                          options=RunOptions(), heartbeat_s=60, notifier=Notifier([listener]))


def _notifications(session_factory) -> int:  # noqa: ANN001
    with session_factory() as s:
        return s.scalar(select(func.count()).select_from(Notification))


def test_the_notifier_hears_a_verdict_after_it_committed_and_its_messages_reach_the_outbox(session_factory, tmp_path):
    job_id, attempt = _claimed(session_factory)
    listener = Recording(session_factory)
    run_claimed(_env(session_factory, tmp_path, FakePipeline(), listener), job_id, attempt)
    assert listener.heard == [(job_id, "accept", "accept")]     # another session saw it: committed
    assert _notifications(session_factory) == 1


def test_a_verdict_rolled_back_for_a_superseded_attempt_is_never_announced(session_factory, tmp_path):
    job_id, attempt = _claimed(session_factory)

    def taken_by_another_worker() -> None:
        with session_factory() as s:
            claims.Claims(s).requeue_orphans(worker_prefix="w1")
            claims.Claims(s).claim(job_id, worker="w2")

    listener = Recording(session_factory)
    pipeline = FakePipeline(before_return=taken_by_another_worker)
    run_claimed(_env(session_factory, tmp_path, pipeline, listener), job_id, attempt)
    assert listener.heard == []
    assert _notifications(session_factory) == 0
    with session_factory() as s:
        assert s.scalar(select(func.count()).select_from(VerdictRecord)) == 0
        assert s.scalars(select(NoticeRecord)).all() == []      # no verdict's notice left behind


def test_a_verdict_whose_commit_fails_is_not_announced_only_the_error_that_was_stored(session_factory, tmp_path):
    job_id, attempt = _claimed(session_factory)

    def refuse_accept(session) -> None:  # noqa: ANN001
        stored = session.scalar(select(VerdictRecord.verdict).where(VerdictRecord.job_id == job_id))
        if stored == "accept":
            raise RuntimeError("the database went away at commit")

    listener = Recording(session_factory)
    event.listen(Session, "before_commit", refuse_accept)       # the executor's sessions are the store's
    try:
        run_claimed(_env(session_factory, tmp_path, FakePipeline(), listener), job_id, attempt)
    finally:
        event.remove(Session, "before_commit", refuse_accept)
    ((heard_job, heard, committed),) = listener.heard
    assert (heard_job, heard, committed) == (job_id, "error", "error")    # never the rolled-back accept
    with session_factory() as s:
        assert s.get(Revision, s.scalar(select(VerdictRecord.revision_id))).status == "done"
        # the accept's notice went with its transaction; the error's was handed and is gone
        assert s.scalars(select(NoticeRecord)).all() == []
