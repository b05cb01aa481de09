"""One compile pool per job, shared by both sides' static stages and the build: a second request for a
key joins the compile in flight, and the binding (`build.prefetch`) compiles while the static stages run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from gate.compiling.objects import CompiledObject


def compile_workers() -> int:
    """Compiles at once for one job: half the cores (a CPU machine is shared; heavy templates want several)."""
    return max(1, (os.cpu_count() or 2) // 2)


class CompilePool:
    """At most `workers` compiles at once, each key once. Both sides' compiles run side by side in it (one
    after the other they took 82 + 81 s for one monorepo)."""

    def __init__(self, workers: int):
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="compile")
        self._lock = threading.Lock()
        self._flights: dict[str, Future] = {}
        self._for_the_build: set[str] = set()     # keys `build.prefetch` started: the build's own compiles

    def submit(self, key: str, work: Callable[[], CompiledObject], *, for_the_build: bool = False) -> tuple[Future, bool]:
        """The future of `key`'s work and whether this call started it (False: joined a flight)."""
        with self._lock:
            if key in self._flights:
                return self._flights[key], False
            future = self._flights[key] = self._pool.submit(work)
            if for_the_build:
                self._for_the_build.add(key)
            return future, True

    def made_elsewhere(self, key: str, started_here: bool) -> bool:
        """Whether the build joined a flight of `key` that `build.prefetch` did not start: a hit for it."""
        return not started_here and key not in self._for_the_build

    def __enter__(self) -> CompilePool:
        return self

    def __exit__(self, *exc: object) -> None:
        # Queued compiles nobody waits for (a binding prefetched for a build that never comes) are
        # dropped; one already running finishes and lands in the object cache for the next job.
        self._pool.shutdown(wait=True, cancel_futures=True)
