"""Read kernel histories into the `SeriesCache` at server start, in a background thread.

After a restart the cache is empty, and the first view of a 10,000-revision kernel page paid the
full read of its twenty traces (~0.3-0.5 s) on top of building the page. `SeriesWarmup` reads them
before anyone asks: every (kernel, GPU kind) with verdicts, the most recently judged first, no more
than the cache holds (so warm-up never evicts what it read), each with the traces and revision
details the unfiltered kernel page asks for.

A request that arrives first is still served correctly (the cache reads each history under its
lock), and requests come first: warm-up starts no history while one is served (`serving`). Warm-up
is an optimization: a failure is logged and ends it, and it never holds up start or shutdown for
more than the read in progress.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gate.figures.kernel_page import wanted_traces
from gate.storage.series_cache import SeriesCache
from gate.storage.unit import Store

log = logging.getLogger(__name__)


class SeriesWarmup:
    def __init__(self, store: Store, cache: SeriesCache, max_points: int) -> None:
        self.store = store
        self.cache = cache
        self.max_points = max_points         # the page's, so revision details match its points
        self.done = threading.Event()        # set once finished, failed, stopped or turned off
        self.warmed: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._serving = 0                    # requests reading the cache now
        self._quiet = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="history-warmup", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """While a request reads histories: warm-up waits before its next one."""
        with self._quiet:
            self._serving += 1
        try:
            yield
        finally:
            with self._quiet:
                self._serving -= 1
                self._quiet.notify_all()

    def stop(self) -> None:
        """Stop after the history being read (if any); returns once the thread has ended."""
        self._stop.set()
        with self._quiet:
            self._quiet.notify_all()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            with self.store.unit() as uow:
                pairs = uow.history.recent_histories(self.cache.max_histories)
            for kernel, gpu_kind in pairs:
                with self._quiet:
                    self._quiet.wait_for(lambda: self._serving == 0 or self._stop.is_set())
                if self._stop.is_set():
                    return
                with self.store.unit() as uow:   # one short transaction per history
                    uow.history.kernel_page(kernel, gpu_kind, None, traces=wanted_traces, peer_metrics={},
                                            max_points=self.max_points, cache=self.cache)
                self.warmed.append((kernel, gpu_kind))
        except Exception:  # noqa: BLE001 (pages still read on their own; the server must start)
            log.warning("history warm-up stopped after %d histories", len(self.warmed),
                        exc_info=True)
        finally:
            self.done.set()
