"""Planning (git fetches, gate.toml reads) on its own bounded workers, never on the threads that
serve HTTP.

Issue 24: planning ran as a background task on the thread pool that also serves pages, so 45 silent
git remotes left `/healthz` unanswered for minutes, and after a restart the leftovers were planned
one by one before the server answered at all. Here `workers` threads take tasks from a queue of
at most `queue_size` waiting tasks: `offer` never blocks (None when the queue is full: the caller
answers 503 with Retry-After), and `feed` (start-up recovery) waits for room on its own thread, so
the server answers while leftovers are planned.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

log = logging.getLogger(__name__)

Task = Callable[[], Any]
RETRY_AFTER_S = 30          # what a refused submission is told: a silent remote ends within the git timeout


class Planner:
    def __init__(self, workers: int, queue_size: int):
        if workers < 1 or queue_size < 1:
            raise ValueError(f"the planner needs at least one worker and one queue slot, got {workers} and "
                             f"{queue_size} (GATE_PLANNER_WORKERS, GATE_PLANNER_QUEUE)")
        self.workers, self.queue_size = workers, queue_size
        self._queue: queue.Queue[tuple[Task, Future, str]] = queue.Queue(maxsize=queue_size)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"planner-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, wait_s: float = 2.0) -> None:
        """Stop taking tasks. A worker inside a git call is a daemon thread: it is not waited for
        past `wait_s` (its revision stays queued and is planned at the next start)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(wait_s / max(len(self._threads), 1))
        self._threads.clear()

    def has_room(self) -> bool:
        return not self._queue.full()

    def offer(self, task: Task, what: str) -> Future | None:
        """Queue `task`; its Future, or None at once when the queue is full."""
        future: Future = Future()
        try:
            self._queue.put_nowait((task, future, what))
        except queue.Full:
            log.warning("planner queue full (%d waiting): %s refused", self.queue_size, what)
            return None
        return future

    def feed(self, tasks: Iterable[tuple[Task, str]]) -> threading.Thread:
        """Queue `tasks` from a thread of its own, waiting for room (start-up recovery)."""
        def run() -> None:
            for task, what in tasks:
                entry = (task, Future(), what)
                while not self._stop.is_set():
                    try:
                        self._queue.put(entry, timeout=0.5)
                        break
                    except queue.Full:
                        continue

        thread = threading.Thread(target=run, name="planner-feed", daemon=True)
        thread.start()
        return thread

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                entry = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            task, future, what = entry
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(task())
            except BaseException as exc:     # noqa: BLE001 - a worker outlives any one task
                log.exception("planning %s failed", what)
                future.set_exception(exc)
