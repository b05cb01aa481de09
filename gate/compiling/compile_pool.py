"""One compile pool per job: every object the job needs compiled once, whoever asks for it first.

The static stages of both sides and the build share it. A source both revisions share has one key;
a second request for a key joins the compile in flight (single flight) instead of running it again.
The build's objects that the static stage does not make (a `.cpp` binding that includes torch) are
submitted at the job's start (`build.prefetch`), so on a cold cache the binding compiles while the
kernels' static stages run, and the build links as soon as both are there.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from gate.compiling.objects import CompiledObject


def compile_workers() -> int:
    """Compiles at once for one job: half the cores (a CPU machine is shared, a GPU worker's heavy
    template sources want several)."""
    return max(1, (os.cpu_count() or 2) // 2)


class CompilePool:
    """At most `workers` compiles at once; each key compiled once per pool (see the module docstring).

    The candidate's and the baseline's compiles run side by side in it (one after the other they
    took 82 + 81 s for one monorepo), within one job's `compile_workers`.
    """

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
        """Whether the build found `key`'s object made by another stage (a hit for the build, as the
        object cache would have given it): a flight it joined that `build.prefetch` did not start."""
        return not started_here and key not in self._for_the_build

    def __enter__(self) -> CompilePool:
        return self

    def __exit__(self, *exc: object) -> None:
        # Queued compiles nobody waits for (a binding prefetched for a build that never comes) are
        # dropped; one already running finishes and lands in the object cache for the next job.
        self._pool.shutdown(wait=True, cancel_futures=True)
