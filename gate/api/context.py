"""What a running app holds: settings, the database, the source reader and the executor."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from gate.config import Settings
from gate.executors.base import Executor
from gate.notify import Notifier
from gate.services.sources import SourceReader
from gate.services.submissions import plan_by_id, plan_pending

log = logging.getLogger(__name__)


class NoExecutor:
    """`gate serve --no-executor`: jobs stay queued for `gate worker` processes."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def wake(self) -> None: ...
    def cancel(self, job_ids: list[int]) -> None: ...


@dataclass
class GateContext:
    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    sources: SourceReader
    executor: Executor
    notifier: Notifier = field(default_factory=Notifier)   # composed by `create_app` from the settings

    def plan_later(self, revision_id: int) -> None:
        """Plan a stored revision, then wake the executor (a background task after a fast reply)."""
        try:
            plan_by_id(self.session_factory, revision_id, sources=self.sources, notifier=self.notifier)
        except Exception:   # stays queued without jobs: planned again at the next start
            log.exception("planning revision %s failed", revision_id)
            return
        self.executor.wake()

    def recover(self) -> None:
        """Start-up: plan what was submitted but never planned."""
        planned = plan_pending(self.session_factory, sources=self.sources, notifier=self.notifier)
        if planned:
            log.warning("planned revisions left unplanned by a previous run: %s", planned)
