"""Outbound notifications: GitHub commit statuses / Check Runs and signed outbound webhooks.

Pure values and HTTP: nothing here reads or writes the database. A `Notifier` turns events that
were already committed into `Delivery` values; the caller stores those in the outbox
(`storage/outbox.py`) in a transaction of their own, and a sweep (`gate.services.outbox`) sends
them with retries, one row at a time through `sender.py`.

There is no registry: whoever starts a service composes its notifier from the settings
(`gate.notify.listeners.notifier_for`), so two services in one process (or two tests) never see
each other's listeners.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from gate.domain.notices import NoticeKind

if TYPE_CHECKING:
    from gate.domain.notices import Delivery, JobFacts, Notice
    from gate.domain.verdict import VerdictReport

log = logging.getLogger(__name__)


class Listener(Protocol):
    def jobs_queued(self, jobs: Sequence[JobFacts]) -> list[Delivery]: ...
    def verdict(self, job: JobFacts, report: VerdictReport) -> list[Delivery]: ...
    def cancelled(self, jobs: Sequence[JobFacts]) -> list[Delivery]: ...


class Notifier:
    """The listeners one service was composed with. Events reach it after their transaction
    committed, so a listener that fails costs its own messages only: it is logged and the other
    listeners still speak (the event itself is already stored)."""

    def __init__(self, listeners: Sequence[Listener] = ()):
        self.listeners: tuple[Listener, ...] = tuple(listeners)

    def deliveries(self, notice: Notice) -> list[Delivery]:
        """The messages of a committed event, by its kind."""
        if notice.kind is NoticeKind.VERDICT:
            if notice.report is None:
                raise ValueError(f"notice {notice.id}: a verdict notice without its report")
            return [d for job in notice.jobs for d in self.verdict(job, notice.report)]
        if notice.kind is NoticeKind.QUEUED:
            return self.jobs_queued(notice.jobs)
        return self.cancelled(notice.jobs)

    def jobs_queued(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        return self._each("jobs_queued", lambda listener: listener.jobs_queued(jobs))

    def verdict(self, job: JobFacts, report: VerdictReport) -> list[Delivery]:
        return self._each("verdict", lambda listener: listener.verdict(job, report))

    def cancelled(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        return self._each("cancelled", lambda listener: listener.cancelled(jobs))

    def _each(self, event: str, call: Callable[[Listener], list[Delivery]]) -> list[Delivery]:
        out: list[Delivery] = []
        for listener in self.listeners:
            try:
                out += call(listener)
            except Exception:   # a bug in one listener must not silence the others
                log.exception("notification listener %s failed on %s", type(listener).__name__, event)
        return out
