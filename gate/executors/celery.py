"""The distributed executor: Celery (Redis or RabbitMQ) feeding GPU workers on other hosts.

The database stays the source of truth. The server sends `run_job(job_id)` for each queued job to the
queue of its GPU kind (`gate.<kind>`; `gate.any` for jobs any GPU may run). The task claims the row by
id with the same atomic claim as the local executor, so a message delivered twice runs the job at most
once at a time and stores one verdict. A worker killed mid-job stops beating; the server's
`OrphanSweeper` re-queues and re-sends its job (70 s with the defaults); the dead worker's
unacknowledged message, back after Redis's visibility timeout, finds the job done or running
elsewhere, and the claim drops it.
"""

from __future__ import annotations

import logging
import re
import threading

from celery import Celery

from gate.executors.base import JobEnvironment, run_claimed
from gate.executors.liveness import OrphanSweeper, worker_id
from gate.executors.spare import for_worker
from gate.nvidia.devices import Gpu
from gate.storage.claims import Claims

log = logging.getLogger(__name__)

TASK_NAME = "gate.run_job"


def queue_name(gpu_kind: str) -> str:
    """`NVIDIA H100 80GB HBM3` -> `gate.nvidia-h100-80gb-hbm3` (broker-safe)."""
    return "gate." + (re.sub(r"[^a-z0-9]+", "-", gpu_kind.lower()).strip("-") or "any")


def make_celery(broker_url: str) -> Celery:
    app = Celery("gate", broker=broker_url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,                # a worker that dies mid-job leaves the message to redeliver
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,       # one job at a time per worker process (one GPU)
        task_ignore_result=True,            # results live in the database, not the backend
        broker_connection_retry_on_startup=True,
        task_default_queue=queue_name("any"),
        # An unacknowledged message (its worker died) is delivered again after this long; the sweeper
        # has re-sent the job long before, so this only bounds how long a stray copy waits.
        broker_transport_options={"visibility_timeout": 3600},
    )
    return app


class CeleryExecutor:
    """Both sides: the server sends (`start`, `wake`), a worker runs (`register_worker_task`)."""

    def __init__(self, env: JobEnvironment, broker_url: str, *, app: Celery | None = None,
                 worker_name: str | None = None, sweeper: OrphanSweeper | None = None, gpu: Gpu | None = None):
        self.env = env
        self.app = app or make_celery(broker_url)
        self.worker_name = worker_name or worker_id("celery", "worker")
        self.sweeper = sweeper or OrphanSweeper(env.store, self.resend)
        self.gpu = gpu                # a worker's one GPU (`gate worker --gpu`): its jobs' children see it alone
        self._sent: set[int] = set()
        self._lock = threading.Lock()
        # This worker process's child started ahead of its next job (one job at a time: `--pool=solo`).
        self._spares = for_worker(env.data_dir, self.worker_name, env.spare_child, gpu)

        def run_job(job_id: int) -> str:
            return self.run_job(job_id)

        self.task = self.app.task(name=TASK_NAME)(run_job)

    def run_job(self, job_id: int) -> str:
        """The task body: claim the row by id, run it; a message for a job not claimable is dropped."""
        with self.env.store.unit() as uow:
            attempt = uow.group(Claims).claim(job_id, worker=self.worker_name, gpu=self.gpu)
        if attempt is None:
            log.info("job %s: not claimable (done, or running elsewhere); message dropped", job_id)
            return "skipped"
        run_claimed(self.env, job_id, attempt, spares=self._spares, gpu=self.gpu)
        return "ran"

    def dispatch_queued(self) -> list[int]:
        """Send a message for every queued job not yet sent by this process."""
        with self.env.store.unit() as uow:
            rows = uow.group(Claims).queued()
        sent = []
        with self._lock:
            for job_id, gpu_kind in rows:
                if job_id in self._sent:
                    continue
                self.task.apply_async(args=[job_id], queue=queue_name(gpu_kind))
                self._sent.add(job_id)
                sent.append(job_id)
        return sent

    def resend(self, job_ids: list[int]) -> None:
        """Jobs the sweeper put back in the queue: send them again."""
        with self._lock:
            self._sent.difference_update(job_ids)
        self.wake()

    def start(self) -> None:
        """Server side: re-queue and re-send orphans now, then sweep for them periodically."""
        self.sweeper.sweep()
        self.dispatch_queued()
        self.sweeper.start()

    def stop(self) -> None:
        self.sweeper.stop()

    def cancel(self, job_ids: list[int]) -> None:
        """Nothing to send: the claim drops a cancelled job's message; a worker running one kills its child
        at its next heartbeat (`run_claimed`)."""

    def wake(self) -> None:
        try:
            self.dispatch_queued()
        except Exception:   # broker down: the rows stay queued and are sent at the next wake/start
            log.exception("could not reach the broker; jobs stay queued")
