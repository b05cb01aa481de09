"""The embedded executor: one thread per GPU (one in all with no GPU) taking jobs from the database.

Used inside `gate serve` and by `gate worker` with GATE_EXECUTOR=local (a database-polling worker).
At start, and then every `sweep_s`, its `OrphanSweeper` re-queues the jobs dead workers left running
(`liveness.py`). `cancel(job_ids)` stops the jobs this process runs at once (their children's process
groups are killed).
"""

from __future__ import annotations

import logging
import threading

from gate.executors.base import JobEnvironment, run_claimed
from gate.executors.spare import Spares, for_worker
from gate.executors.liveness import OrphanSweeper, worker_id
from gate.nvidia.devices import list_gpus
from gate.storage.claims import Claims

log = logging.getLogger(__name__)


def local_gpus() -> list[str]:
    """GPU names from `nvidia-smi` (the server needs no torch); [] when there is none."""
    return [gpu.name for gpu in list_gpus()]


class LocalExecutor:
    def __init__(self, env: JobEnvironment, *, gpus: list[str] | None = None, poll_s: float = 2.0,
                 role: str = "serve", sweeper: OrphanSweeper | None = None):
        self.env = env
        self.gpus = local_gpus() if gpus is None else gpus
        self.poll_s = poll_s
        self.role = role
        self.sweeper = sweeper or OrphanSweeper(env.store, lambda _ids: self.wake())
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[int, threading.Event] = {}      # job id -> its cancel event
        self._running_lock = threading.Lock()
        self._spares: dict[str, Spares] = {}                 # worker id -> its child started ahead

    def _slots(self) -> list[tuple[str, list[str]]]:
        """(worker id, GPU kinds it serves) per slot. Jobs of kind "any" go to the first free slot."""
        if not self.gpus:
            return [(worker_id("local", self.role, "cpu"), ["any", "cpu"])]
        return [(worker_id("local", self.role, f"gpu{i}"), ["any", name]) for i, name in enumerate(self.gpus)]

    def recover(self) -> list[int]:
        """Re-queue what dead processes (of this host, or silent too long) left running."""
        return self.sweeper.sweep()

    def start(self) -> None:
        self.recover()
        self.sweeper.start()
        for worker, kinds in self._slots():
            t = threading.Thread(target=self._loop, args=(worker, kinds), name=worker, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self.sweeper.stop()
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join()
        self._threads.clear()
        self.close_spares()

    def close_spares(self) -> None:
        """Stop the children started ahead of jobs that will not come now."""
        for spares in self._spares.values():
            spares.close()
        self._spares.clear()

    def _spares_of(self, worker: str) -> Spares | None:
        """The slot's spares (`gate.executors.spare`), where the environment asks for them."""
        if worker not in self._spares and (spares := for_worker(self.env.data_dir, worker, self.env.spare_child)):
            self._spares[worker] = spares
        return self._spares.get(worker)

    def wake(self) -> None:
        self._wake.set()

    def cancel(self, job_ids: list[int]) -> None:
        with self._running_lock:
            for job_id in job_ids:
                if job_id in self._running:
                    self._running[job_id].set()

    def run_once(self, worker: str, kinds: list[str]) -> bool:
        """Claim and run one job; False when none was queued."""
        with self.env.store.unit() as uow:
            claimed = uow.group(Claims).claim_next(worker=worker, gpu_kinds=kinds)
        if claimed is None:
            return False
        job_id, attempt = claimed
        cancel = threading.Event()
        with self._running_lock:
            self._running[job_id] = cancel
        try:
            run_claimed(self.env, job_id, attempt, cancel, spares=self._spares_of(worker))
        finally:
            with self._running_lock:
                self._running.pop(job_id, None)
        return True

    def drain(self) -> int:
        """Run queued jobs in this thread until none is left (`gate worker --once`); how many ran."""
        worker, kinds = self._slots()[0]
        count = 0
        while not self._stop.is_set() and self.run_once(worker, kinds):
            count += 1
        return count

    def _loop(self, worker: str, kinds: list[str]) -> None:
        while not self._stop.is_set():
            try:
                ran = self.run_once(worker, kinds)
            except Exception:   # the database went away: wait and try again, never die
                log.exception("%s: taking a job failed", worker)
                ran = False
            if not ran:
                self._wake.wait(self.poll_s)
                self._wake.clear()
