"""Read kernel histories into the `SeriesCache` at server start, in a background thread.

After a restart the store is empty, and the first view of a 10,000-revision kernel page paid the
full read of its twenty traces (~0.3-0.5 s) on top of building the page. `SeriesWarmup` reads them
before anyone asks: every (kernel, GPU kind) with verdicts, the most recently judged first, no more
than the store holds (so warm-up never evicts what it read), each with the traces and revision
details the unfiltered kernel page asks for.

A request that arrives first is still served correctly: the store reads each history under that
history's lock, so a request for the history being read waits for it and then reads only what is
newer; one for a history not read yet reads it itself, and warm-up then finds it held. Warm-up is an
optimization: a failure is logged and ends it, and it never holds up start or shutdown for more
than the read in progress.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from gate.figures.kernel_page import wanted_traces
from gate.storage import kernel_series
from gate.storage.series_cache import SeriesCache

log = logging.getLogger(__name__)


class SeriesWarmup:
    def __init__(self, session_factory: sessionmaker[Session], store: SeriesCache,
                 max_points: int) -> None:
        self.session_factory = session_factory
        self.store = store
        self.max_points = max_points         # the page's, so revision details match its points
        self.done = threading.Event()        # set once finished, failed, stopped or turned off
        self.warmed: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="history-warmup", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop after the history being read (if any); returns once the thread has ended."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        try:
            with self.session_factory() as session:
                pairs = kernel_series.recent_histories(session, self.store.max_histories)
            for kernel, gpu_kind in pairs:
                if self._stop.is_set():
                    return
                with self.session_factory() as session:   # one short transaction per history
                    self._warm(session, kernel, gpu_kind)
                self.warmed.append((kernel, gpu_kind))
        except Exception:  # noqa: BLE001 (pages still read on their own; the server must start)
            log.warning("history warm-up stopped after %d histories", len(self.warmed),
                        exc_info=True)
        finally:
            self.done.set()

    def _warm(self, session: Session, kernel: str, gpu_kind: str) -> None:
        traces = wanted_traces(kernel_series.kernel_shapes(session, kernel, gpu_kind),
                               kernel_series.kernel_archs(session, kernel, gpu_kind))
        kernel_series.kernel_history(session, kernel, gpu_kind, traces, max_points=self.max_points,
                               store=self.store)
