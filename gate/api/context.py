"""What a running app holds: settings, the database, the source reader and the executor."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from fastapi import HTTPException

from gate.config import Settings
from gate.domain.executor import Executor
from gate.notify import Notifier
from gate.errors import GateError
from gate.services.planner import RETRY_AFTER_S, Fetch, Planner, Task
from gate.services.sources import SourceReader
from gate.services.submissions import PLANNER_FULL, PlanResult, canonical_repo, plan_by_id
from gate.sources.policy import FetchPolicy, url_kind
from gate.storage.unit import Store

log = logging.getLogger(__name__)


class PlannerFull(HTTPException):
    """503 with Retry-After: the planner's queue for such a repository is full (nothing was planned)."""

    def __init__(self) -> None:
        super().__init__(503, PLANNER_FULL, headers={"Retry-After": str(RETRY_AFTER_S)})


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

    def fetch_of(self, repo: str) -> Fetch:
        """What planning `repo` fetches, for the planner's caps: its stored URL, its host, and whether
        the gate mirrors it already."""
        try:
            url = canonical_repo(repo)[0]
            scheme, host = url_kind(url)
        except GateError:           # an unknown `~user`, a malformed URL: planning will say why
            return Fetch(repo)
        mirror = getattr(self.sources, "mirror", None)
        return Fetch(url, "" if scheme == "local" else host.lower(), mirror is not None and mirror.holds(url))

    def plan_later(self, revision_id: int, fetch: Fetch, before: Callable[[], None] | None = None) -> Future | None:
        """Plan a stored revision on the planner's workers (after `before`, e.g. finding a merge
        base), then wake the executor. None when the planner's queue is full."""
        return self.planner.offer(self._planning(revision_id, before), f"revision {revision_id}", fetch)

    def _planning(self, revision_id: int, before: Callable[[], None] | None = None) -> Task:
        def task() -> PlanResult:
            if before is not None:
                before()
            result = plan_by_id(self.store, revision_id, sources=self.sources, notifier=self.notifier)
            self.executor.wake()
            return result

        return task

    def recover(self) -> list[int]:
        """Start-up: queue what was submitted but never planned, on the planner's workers (the
        server answers meanwhile; one revision that fails to plan ends `error`, the others go on)."""
        with self.store.unit() as uow:
            left = [uow.planning.to_plan(i) for i in uow.planning.unplanned_ids()]
        if left:
            log.warning("planning revisions left unplanned by a previous run: %s", [todo.id for todo in left])
            self.planner.feed([(self._planning(todo.id), f"revision {todo.id}", self.fetch_of(todo.repo_url))
                               for todo in left])
        return [todo.id for todo in left]
