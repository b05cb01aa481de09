"""Outbound notifications: GitHub commit statuses / Check Runs and signed outbound webhooks.

Pure values and HTTP: nothing here reads or writes the database. Two hooks turn job events into
`Delivery` values; the caller stores them (the outbox, `storage/outbox.py`) in the transaction of the event, so
no network I/O is in a job's path and a verdict is never lost to a flaky network:
    on_jobs_queued(jobs)            -> e.g. `pending` commit statuses
    on_verdict(job, report)         -> e.g. the final status, a completed Check Run, webhooks
    on_cancelled(jobs)              -> e.g. an `error` status and a `cancelled` Check Run

Listeners are registered once at start-up, from the settings: `configure(settings)`. The sweep that
sends the stored rows is `gate.services.outbox`; `sender.py` sends one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from gate.config import Settings
    from gate.domain.notices import Delivery, JobFacts
    from gate.domain.verdict import VerdictReport


class Listener(Protocol):
    def jobs_queued(self, jobs: Sequence[JobFacts]) -> list[Delivery]: ...
    def verdict(self, job: JobFacts, report: VerdictReport) -> list[Delivery]: ...
    def cancelled(self, jobs: Sequence[JobFacts]) -> list[Delivery]: ...


_listeners: list[Listener] = []


def register(listener: Listener) -> None:
    _listeners.append(listener)


def clear() -> None:
    """Forget every listener (tests, and re-configuration at start-up)."""
    _listeners.clear()


def on_jobs_queued(jobs: Sequence[JobFacts]) -> list[Delivery]:
    return [d for listener in _listeners for d in listener.jobs_queued(jobs)]


def on_verdict(job: JobFacts, report: VerdictReport) -> list[Delivery]:
    return [d for listener in _listeners for d in listener.verdict(job, report)]


def on_cancelled(jobs: Sequence[JobFacts]) -> list[Delivery]:
    return [d for listener in _listeners for d in listener.cancelled(jobs)]


def configure(settings: Settings) -> list[Listener]:
    """Replace the registered listeners with those the settings ask for (GitHub, webhooks)."""
    from gate.notify.listeners import configure as configure_listeners

    return configure_listeners(settings)
