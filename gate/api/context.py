"""What a running app holds: settings, the database, the source reader and the executor."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from gate.config import Settings
from gate.domain.executor import Executor
from gate.notify import Notifier
from gate.services.planner import Planner
from gate.services.sources import SourceReader
from gate.services.submissions import PlanResult, plan_by_id
from gate.sources.policy import FetchPolicy
from gate.storage.unit import Store

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
    store: Store
    sources: SourceReader
    executor: Executor
    planner: Planner
    policy: FetchPolicy         # what a submission is refused for before it is stored
    notifier: Notifier = field(default_factory=Notifier)   # composed by `create_app` from the settings

    def plan_later(self, revision_id: int, before: Callable[[], None] | None = None) -> Future | None:
        """Plan a stored revision on the planner's workers (after `before`, e.g. finding a merge
        base), then wake the executor. None when the planner's queue is full."""
        def task() -> PlanResult:
            if before is not None:
                before()
            result = plan_by_id(self.store, revision_id, sources=self.sources, notifier=self.notifier)
            self.executor.wake()
            return result

        return self.planner.offer(task, f"revision {revision_id}")

    def recover(self) -> list[int]:
        """Start-up: queue what was submitted but never planned, on the planner's workers (the
        server answers meanwhile; one revision that fails to plan ends `error`, the others go on)."""
        with self.store.unit() as uow:
            ids = uow.planning.unplanned_ids()
        if ids:
            log.warning("planning revisions left unplanned by a previous run: %s", ids)
            self.planner.feed([(lambda i=i: self._plan_now(i), f"revision {i}") for i in ids])
        return ids

    def _plan_now(self, revision_id: int) -> None:
        plan_by_id(self.store, revision_id, sources=self.sources, notifier=self.notifier)
        self.executor.wake()
