"""Who runs a job, and whether that worker still lives: unique worker ids and the orphan sweeper.

A worker id (`worker_id`) names executor, host, role, pid and slot: two `gate worker`s on one host
never share one, so neither mistakes the other's live job for its own leftover. A job is an orphan
when its worker's heartbeat is older than `claims.STALE_AFTER_S`, or at once when its worker was a
process of this host that no longer exists (a restart finds its own leftovers without waiting).
`OrphanSweeper` re-queues them every `sweep_s` and hands their ids to the executor to send again; the
attempt check in `store_outcome` keeps a late result of the dead attempt from being stored.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
from collections.abc import Callable

from gate.storage import claims
from gate.storage.unit import Store

log = logging.getLogger(__name__)
SWEEP_S = 10.0
_ID = re.compile(r"^[a-z]+@(?P<host>[^/]+)/[^/]*/(?P<pid>\d+)(?::|$)")


def worker_id(executor: str, role: str, slot: str = "") -> str:
    """`local@gpu-host/serve/4242:gpu0`: executor, host, role, process id, slot."""
    return f"{executor}@{socket.gethostname()}/{role}/{os.getpid()}" + (f":{slot}" if slot else "")


def dead_on_this_host(worker: str) -> bool:
    """True when `worker` names a process of this host that no longer exists."""
    match = _ID.match(worker)
    if match is None or match.group("host") != socket.gethostname():
        return False
    pid = int(match.group("pid"))
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:        # exists, under another user
        return False
    return False


class OrphanSweeper:
    """Every `sweep_s`: re-queue orphaned jobs and pass their ids to `on_requeued`."""

    def __init__(self, store: Store, on_requeued: Callable[[list[int]], None], *,
                 sweep_s: float = SWEEP_S, stale_after_s: float = claims.STALE_AFTER_S,
                 dead_worker: Callable[[str], bool] = dead_on_this_host):
        self.store = store
        self.dead_worker = dead_worker
        self.on_requeued = on_requeued
        self.sweep_s = sweep_s
        self.stale_after_s = stale_after_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sweep(self) -> list[int]:
        with self.store.unit() as uow:
            ids = uow.group(claims.Claims).requeue_orphans(stale_after_s=self.stale_after_s,
                                                           dead_worker=self.dead_worker)
        if ids:
            log.warning("re-queued orphaned jobs: %s", ids)
            self.on_requeued(ids)
        return ids

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gate-orphan-sweeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.sweep_s):
            try:
                self.sweep()
            except Exception:     # the database may be briefly away; the next sweep retries
                log.exception("orphan sweep failed")
