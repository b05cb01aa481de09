"""Planning (git fetches, gate.toml reads) on its own bounded workers, never on the threads that
serve HTTP, and fair between repositories.

Issue 24: planning ran on the thread pool that also serves pages, so 45 silent git remotes left
`/healthz` unanswered for minutes. Issue 44: 68 submissions of repositories whose host accepts and
never answers filled the 4 workers and 64 queue slots, and every other submission and webhook got
503 until git gave up on them (85 minutes at the 300 s timeout, renewable). Here `workers` threads
take tasks from two queues of at most `queue_size` waiting tasks each, and each task names what it
fetches (`Fetch`):

- at most `per_host` tasks of one host, and one of one repository, run at once: the others wait in
  their queue holding no worker, so one silent host holds at most `per_host` workers;
- repositories the gate already mirrors wait in a queue of their own, which goes first, and one
  worker is theirs alone (strangers may hold all but one): a known repository is planned without
  waiting behind strangers' fetches;
- `offer` never blocks (None when its queue is full: the caller answers 503 with Retry-After), and
  `feed` (start-up recovery) waits for room on its own thread, so the server answers meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

Task = Callable[[], Any]
RETRY_AFTER_S = 30          # what a refused submission is told: a silent remote ends within git's low-speed limit
PER_HOST = 2                # fetches of one host at once


@dataclass(frozen=True)
class Fetch:
    """What a planning task fetches: its repository (as stored), the host it comes from ("": this
    disk) and whether the gate mirrors it already. The caps and the queue follow from it."""

    repo: str = ""
    host: str = ""
    mirrored: bool = False


@dataclass
class _Waiting:
    task: Task
    future: Future
    what: str
    fetch: Fetch


class Planner:
    def __init__(self, workers: int, queue_size: int, per_host: int = PER_HOST):
        if workers < 1 or queue_size < 1:
            raise ValueError(f"the planner needs at least one worker and one queue slot, got {workers} and "
                             f"{queue_size} (GATE_PLANNER_WORKERS, GATE_PLANNER_QUEUE)")
        self.workers, self.queue_size, self.per_host = workers, queue_size, per_host
        self._queues: dict[bool, deque[_Waiting]] = {True: deque(), False: deque()}   # by `Fetch.mirrored`
        self._hosts: Counter[str] = Counter()      # running tasks per host, per repository, of strangers
        self._repos: Counter[str] = Counter()
        self._strangers = 0
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"planner-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, end: Callable[[], None] | None = None, wait_s: float = 2.0) -> None:
        """Stop taking tasks, then call `end` to end the running ones' work (their git children:
        `gate.sources.mirror.end_fetches`). A worker still busy is a daemon thread: it is not waited
        for past `wait_s` (its revision stays queued and is planned at the next start)."""
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        if end is not None:
            end()
        for thread in self._threads:
            thread.join(wait_s / max(len(self._threads), 1))
        self._threads.clear()

    def has_room(self, fetch: Fetch = Fetch()) -> bool:
        with self._changed:
            return len(self._queues[fetch.mirrored]) < self.queue_size

    def offer(self, task: Task, what: str, fetch: Fetch = Fetch()) -> Future | None:
        """Queue `task`; its Future, or None at once when its queue is full."""
        entry = _Waiting(task, Future(), what, fetch)
        with self._changed:
            if len(self._queues[fetch.mirrored]) >= self.queue_size:
                log.warning("planner queue full (%d waiting): %s refused", self.queue_size, what)
                return None
            self._queues[fetch.mirrored].append(entry)
            self._changed.notify_all()
        return entry.future

    def feed(self, tasks: Iterable[tuple[Task, str, Fetch]]) -> threading.Thread:
        """Queue `tasks` from a thread of its own, waiting for room (start-up recovery)."""
        def run() -> None:
            for task, what, fetch in tasks:
                with self._changed:
                    while len(self._queues[fetch.mirrored]) >= self.queue_size and not self._stop.is_set():
                        self._changed.wait(0.5)
                    self._queues[fetch.mirrored].append(_Waiting(task, Future(), what, fetch))
                    self._changed.notify_all()

        thread = threading.Thread(target=run, name="planner-feed", daemon=True)
        thread.start()
        return thread

    def _may_run(self, fetch: Fetch) -> bool:
        strangers_full = not fetch.mirrored and self.workers > 1 and self._strangers >= self.workers - 1
        return not strangers_full and not (fetch.host and self._hosts[fetch.host] >= self.per_host) \
            and not (fetch.repo and self._repos[fetch.repo])

    def _take(self) -> _Waiting | None:
        """The first waiting task that may run now, known repositories first (under the lock)."""
        for queue in (self._queues[True], self._queues[False]):
            for entry in queue:
                if self._may_run(entry.fetch):
                    queue.remove(entry)
                    self._count(entry.fetch, 1)
                    return entry
        return None

    def _count(self, fetch: Fetch, step: int) -> None:
        self._strangers += 0 if fetch.mirrored else step
        for running, key in ((self._hosts, fetch.host), (self._repos, fetch.repo)):
            running[key] += step
            if running[key] <= 0:
                del running[key]

    def _work(self) -> None:
        while not self._stop.is_set():
            with self._changed:
                entry = self._take()
                if entry is None:
                    self._changed.wait(0.5)
                    continue
            try:
                if entry.future.set_running_or_notify_cancel():
                    entry.future.set_result(entry.task())
            except SystemExit as exc:        # the server is stopping (`stop`'s `end`): nothing to say
                entry.future.set_exception(exc)
            except BaseException as exc:     # noqa: BLE001 - a worker outlives any one task
                log.exception("planning %s failed", entry.what)
                entry.future.set_exception(exc)
            finally:
                with self._changed:
                    self._count(entry.fetch, -1)
                    self._changed.notify_all()
