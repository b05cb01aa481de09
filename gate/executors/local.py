"""The embedded executor: one slot per GPU (one in all with no GPU), each a thread taking jobs from the
database one after another and running them on its GPU alone (`gate.executors.child.launch`).

Used inside `gate serve` and by `gate worker` with GATE_EXECUTOR=local. Its GPUs are
`devices.slot_gpus`. Its `OrphanSweeper` re-queues what dead workers left running, at start and every
`sweep_s`; `cancel(job_ids)` kills the children of the jobs this process runs at once.
"""

from __future__ import annotations

import logging
import threading
from typing import NamedTuple

from gate.executors.base import JobEnvironment, run_claimed
from gate.executors.spare import Spares, for_worker
from gate.executors.liveness import OrphanSweeper, worker_id
from gate.nvidia.devices import Gpu, slot_gpus
from gate.storage.claims import Claims

log = logging.getLogger(__name__)


class Slot(NamedTuple):
    worker: str                 # its worker id (`liveness.worker_id`)
    kinds: list[str]            # the GPU kinds of the jobs it takes: "any" and its GPU's name
    gpu: Gpu | None             # the GPU its jobs run on; None: a machine without one


class LocalExecutor:
    def __init__(self, env: JobEnvironment, *, gpus: list[Gpu] | None = None, poll_s: float = 2.0,
                 role: str = "serve", sweeper: OrphanSweeper | None = None, kind: str | None = None):
        self.env = env
        self.gpus = slot_gpus() if gpus is None else gpus
        self.kind = kind            # the GPU kind every slot takes (`gate worker --gpu-kind`); None: its GPU's name
        self.poll_s = poll_s
        self.role = role
        self.sweeper = sweeper or OrphanSweeper(env.store, lambda _ids: self.wake())
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._running: dict[int, threading.Event] = {}      # job id -> its cancel event
        self._running_lock = threading.Lock()
        self._spares: dict[str, Spares] = {}                 # worker id -> its child started ahead

    def _slots(self) -> list[Slot]:
        """One per GPU. Jobs of kind "any" go to the first free slot."""
        if not self.gpus:
            return [Slot(worker_id("local", self.role, "cpu"), ["any", self.kind or "cpu"], None)]
        return [Slot(worker_id("local", self.role, f"gpu{gpu.index}"), ["any", self.kind or gpu.name], gpu)
                for gpu in self.gpus]

    def recover(self) -> list[int]:
        """Re-queue what dead processes (of this host, or silent too long) left running."""
        return self.sweeper.sweep()

    def start(self) -> None:
        self.recover()
        self.sweeper.start()
        for slot in self._slots():
            t = threading.Thread(target=self._loop, args=(slot,), name=slot.worker, daemon=True)
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

    def _spares_of(self, slot: Slot) -> Spares | None:
        """The slot's spares (`gate.executors.spare`), where the environment asks for them."""
        if slot.worker not in self._spares and (
                spares := for_worker(self.env.data_dir, slot.worker, self.env.spare_child, slot.gpu)):
            self._spares[slot.worker] = spares
        return self._spares.get(slot.worker)

    def wake(self) -> None:
        self._wake.set()

    def cancel(self, job_ids: list[int]) -> None:
        with self._running_lock:
            for job_id in job_ids:
                if job_id in self._running:
                    self._running[job_id].set()

    def run_once(self, slot: Slot) -> bool:
        """Claim and run one job on `slot`; False when none was queued."""
        with self.env.store.unit() as uow:
            claimed = uow.group(Claims).claim_next(worker=slot.worker, gpu_kinds=slot.kinds, gpu=slot.gpu)
        if claimed is None:
            return False
        job_id, attempt = claimed
        cancel = threading.Event()
        with self._running_lock:
            self._running[job_id] = cancel
        try:
            run_claimed(self.env, job_id, attempt, cancel, spares=self._spares_of(slot), gpu=slot.gpu)
        finally:
            with self._running_lock:
                self._running.pop(job_id, None)
        return True

    def drain(self) -> int:
        """Run queued jobs here on the first slot until none is left (`gate worker --once`); how many ran."""
        slot = self._slots()[0]
        count = 0
        while not self._stop.is_set() and self.run_once(slot):
            count += 1
        return count

    def _loop(self, slot: Slot) -> None:
        while not self._stop.is_set():
            try:
                ran = self.run_once(slot)
            except Exception:   # the database went away: wait and try again, never die
                log.exception("%s: taking a job failed", slot.worker)
                ran = False
            if not ran:
                self._wake.wait(self.poll_s)
                self._wake.clear()
