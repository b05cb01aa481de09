"""Events notify must hear of: stored with the event, handed once, found again when their process
died before handing them."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from gate.domain.clock import utcnow
from gate.domain.notices import Delivery, JobFacts, NoticeKind
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport
from gate.notify import Notifier
from gate.services.announce import announce, announce_due
from gate.storage.models import Notification, NoticeRecord
from gate.storage.notices import Notices, add_notice
from gate.storage.unit import UnitOfWork

FACTS = JobFacts(job_id=7, kernel="attn", gpu_kind="any", revision_id=3, repo="octo/flash", sha="c" * 40,
                 fingerprint={"gpu_name": "NVIDIA H100"})
REPORT = VerdictReport(Verdict.REJECT, "max_registers: 200 > 128",
                       [RuleRow("max_registers", RuleOutcome.FAIL, "200 > 128", value=200, threshold=128,
                                decisive=True)])


class Hook:
    def __init__(self) -> None:
        self.heard: list[tuple[str, object]] = []

    def jobs_queued(self, jobs):  # noqa: ANN001, ANN201
        self.heard.append(("queued", [j.job_id for j in jobs]))
        return [Delivery("webhook", "http://hook", {"queued": [j.job_id for j in jobs]}, None)]

    def verdict(self, job, report):  # noqa: ANN001, ANN201
        self.heard.append(("verdict", report))
        return [Delivery("webhook", "http://hook", {"verdict": report.verdict.value}, None)]

    def cancelled(self, jobs):  # noqa: ANN001, ANN201
        return []


def _count(session_factory, model) -> int:  # noqa: ANN001
    with session_factory() as s:
        return s.scalar(select(func.count()).select_from(model))


def test_a_notice_rolled_back_with_its_event_leaves_nothing_to_announce(session_factory):
    with session_factory() as s:
        add_notice(s, NoticeKind.VERDICT, [FACTS], REPORT)
        s.rollback()
    with session_factory() as s:
        assert Notices(s).unhanded(utcnow() + timedelta(days=1)) == []


def test_a_notice_is_handed_once_with_its_messages(session_factory):
    with session_factory() as s:
        notice = add_notice(s, NoticeKind.VERDICT, [FACTS], REPORT)
        s.commit()
    hook = Hook()
    with session_factory() as s:
        assert announce(UnitOfWork(s), Notifier([hook]), notice)
    with session_factory() as s:                       # a second hand-off (a sweeper racing) adds nothing
        assert not Notices(s).hand_off(notice.id, [Delivery("webhook", "http://other", {}, None)])
    assert hook.heard == [("verdict", REPORT)]
    assert _count(session_factory, Notification) == 1
    assert _count(session_factory, NoticeRecord) == 0      # taken: nothing pending, no copy kept


def test_a_notice_its_process_never_handed_is_announced_by_the_sweep_with_the_same_values(store, session_factory):
    with session_factory() as s:
        notice = add_notice(s, NoticeKind.VERDICT, [FACTS], REPORT)
        s.commit()                                     # ... and the process died before announcing it
    hook = Hook()
    assert announce_due(store, Notifier([hook])) == 0          # too young: its process may still
    later = utcnow() + timedelta(minutes=5)
    assert announce_due(store, Notifier([hook]), now=later) == 1
    assert announce_due(store, Notifier([hook]), now=later) == 0   # once
    assert hook.heard == [("verdict", REPORT)]         # the report decoded back, equal to the one stored
    with session_factory() as s:
        (row,) = s.scalars(select(Notification)).all()
        assert (row.job_id, row.payload) == (None, {"verdict": "reject"})


def test_a_failing_listener_loses_no_other_listeners_messages(session_factory):
    class Broken(Hook):
        def verdict(self, job, report):  # noqa: ANN001, ANN201
            raise RuntimeError("listener bug")

    with session_factory() as s:
        notice = add_notice(s, NoticeKind.VERDICT, [FACTS], REPORT)
        s.commit()
    hook = Hook()
    with session_factory() as s:
        assert announce(UnitOfWork(s), Notifier([Broken(), hook]), notice)
    assert hook.heard == [("verdict", REPORT)] and _count(session_factory, Notification) == 1
