"""Outbound notifications: GitHub commit statuses / Check Runs and signed outbound webhooks.

The executor calls two hooks inside its own database session. Listeners only *store*
`Notification` rows there (no network I/O in a job's path); a sender delivers them later with
retries, so a verdict is never lost to a flaky network:
    on_jobs_queued(session, jobs)   -> e.g. `pending` commit statuses
    on_verdict(session, job)        -> e.g. the final status, a completed Check Run, webhooks

Listeners are registered once at start-up, from the settings: `configure(settings)`. A `Sweeper`
thread (`start_sweeper`) delivers the stored rows: see `sender.py` for the states of a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy.orm import Session

    from gate.config import Settings
    from gate.notify.sweeper import Sweeper
    from gate.storage.models import Job


class Listener(Protocol):
    def jobs_queued(self, session: Session, jobs: Sequence[Job]) -> None: ...
    def verdict(self, session: Session, job: Job) -> None: ...


_listeners: list[Listener] = []


def register(listener: Listener) -> None:
    _listeners.append(listener)


def clear() -> None:
    """Forget every listener (tests, and re-configuration at start-up)."""
    _listeners.clear()


def on_jobs_queued(session: Session, jobs: Sequence[Job]) -> None:
    for listener in _listeners:
        listener.jobs_queued(session, jobs)


def on_verdict(session: Session, job: Job) -> None:
    for listener in _listeners:
        listener.verdict(session, job)


def configure(settings: Settings) -> list[Listener]:
    """Replace the registered listeners with those the settings ask for (GitHub, webhooks)."""
    from gate.notify.listeners import configure as configure_listeners

    return configure_listeners(settings)


def start_sweeper(settings: Settings, session_factory: Callable[[], Session]) -> Sweeper:
    """Start the thread that delivers stored notifications; call `.stop()` at shutdown."""
    from gate.notify.sender import Sender
    from gate.notify.sweeper import Sweeper

    return Sweeper(Sender.from_settings(settings), session_factory).start()
