"""Running one claimed job to a stored verdict, wherever it runs (a server thread, a Celery worker).

`run_claimed` reads the job's order (`gate.storage.claims.Claims`), runs it (`gate.executors.job`) with
its repository's history while beating its heartbeat, and stores the outcome or the error
(`gate.storage.outcomes.Outcomes`); only once that committed is the verdict announced.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.domain.job import GateOutcome, JobOrder, ProgressEvent, RunOptions
from gate.domain.server_paths import hide
from gate.errors import JobCancelled
from gate.executors.job import GateJob, JobContext
from gate.executors.spare import Spares
from gate.job_folders import remove
from gate.notify import Notifier
from gate.nvidia.devices import Gpu
from gate.services.announce import announce
from gate.storage.claims import HEARTBEAT_S, Claims
from gate.storage.outcomes import Outcomes
from gate.storage.reuse import RepositoryHistory
from gate.storage.unit import Store

log = logging.getLogger(__name__)


@dataclass
class JobEnvironment:
    """Everything a worker needs to run a job, wherever it runs (server thread or Celery worker)."""

    store: Store
    gate_job: GateJob
    data_dir: Path
    options: RunOptions
    mirror: Any = None
    heartbeat_s: float = HEARTBEAT_S
    notifier: Notifier = field(default_factory=Notifier)   # hears of each stored verdict (composed by the caller)
    spare_child: bool = False      # start each job's child before the job, on a GPU (`gate.executors.spare`)


def run_claimed(env: JobEnvironment, job_id: int, attempt: int, cancel: threading.Event | None = None,
                spares: Spares | None = None, gpu: Gpu | None = None) -> None:
    """Run a job this worker has claimed and store its outcome. Never raises for a job's failure: a GateError
    or a bug becomes verdict `error` with the message. `cancel` stops the job, storing nothing (set on
    cancellation, or by a heartbeat that finds the job no longer this attempt's). `spares`: this worker
    thread's; `gpu`: its slot's, the only GPU the job's child sees (None: every GPU)."""
    cancel = cancel or threading.Event()
    with env.store.unit() as uow:
        order = uow.group(Claims).order(job_id)
    # One folder per attempt: a re-queued job may run again elsewhere while this attempt winds down.
    work_dir = Path(env.data_dir).resolve() / "jobs" / str(job_id) / str(attempt)
    work_dir.mkdir(parents=True, exist_ok=True)
    heart = _Heartbeat(env, job_id, attempt, cancel)
    context = JobContext(data_dir=work_dir, options=env.options, mirror=env.mirror, cancel=cancel,
                         on_event=heart.on_event, history=_history(env, order), spares=spares, gpu=gpu)
    try:
        outcome = _gated(env, heart, order, context)
        if outcome is not None:
            _store(env, job_id, attempt, outcome)
    finally:   # the job's checkouts, box folder and copies: the artifact store keeps what counts
        remove(work_dir)
        with contextlib.suppress(OSError):   # another attempt's folder is still there
            work_dir.parent.rmdir()


def _history(env: JobEnvironment, order: JobOrder) -> RepositoryHistory | None:
    """The history's answers for the order's repository (docs/reuse.md); none where nothing may be
    reused: a revision asked to be measured again, or reuse turned off (`GATE_REUSE_MAX_AGE_H=0`)."""
    if order.remeasure or env.options.reuse_max_age_h <= 0 or order.repository_id is None:
        return None
    return RepositoryHistory(env.store, env.data_dir, order.repository_id, env.options.reuse_max_age_h)


def _gated(env: JobEnvironment, heart: _Heartbeat, order: JobOrder, context: JobContext) -> GateOutcome | None:
    """The job's outcome; None when it was cancelled (the row already says what happened) or failed
    in the gate (its `error` is stored and announced here)."""
    try:
        with heart.beating():
            return env.gate_job(order, context)
    except JobCancelled as exc:
        log.info("job %s attempt %s stopped: %s", heart.job_id, heart.attempt, exc)
    except Exception as exc:   # GateError or a bug: the job ends as `error`, the worker carries on
        log.exception("job %s failed in the gate", heart.job_id)
        _store(env, heart.job_id, heart.attempt, error=hide(f"{type(exc).__name__}: {exc}", env.data_dir))
    return None


def _store(env: JobEnvironment, job_id: int, attempt: int, outcome: GateOutcome | None = None,
           error: str = "") -> None:
    """Store the job's end and, only once it committed, hand the verdict to notify."""
    try:
        with env.store.unit() as uow:
            outcomes = uow.group(Outcomes)
            notice = (outcomes.store(job_id, attempt, outcome, env.data_dir) if outcome is not None
                      else outcomes.error(job_id, attempt, error))
    except Exception as exc:   # e.g. a result that does not fit the schema: still an `error`, not lost
        if outcome is None:
            raise
        log.exception("job %s: storing the outcome failed", job_id)
        message = hide(f"storing the result failed: {type(exc).__name__}: {exc}", env.data_dir)
        with env.store.unit() as uow:
            notice = uow.group(Outcomes).error(job_id, attempt, message)
    with env.store.unit() as uow:     # only now, with the verdict committed, does notify hear of it
        announce(uow, env.notifier, notice)


@dataclass
class _Heartbeat:
    """A running job's heartbeat: beaten by each progress event (with its line) and every
    `heartbeat_s`; a beat that finds the job no longer this attempt's (cancelled, or re-queued and
    taken by another worker) stops it."""

    env: JobEnvironment
    job_id: int
    attempt: int
    cancel: threading.Event

    def beat(self, progress: str | None = None, event: tuple[str, str] | None = None) -> None:
        with self.env.store.unit() as uow:
            if not uow.group(Claims).heartbeat(self.job_id, self.attempt, progress=progress, event=event):
                self.cancel.set()

    def on_event(self, event: ProgressEvent) -> None:
        line = f"{event.side} {event.stage} {event.state}" + (f": {event.detail}" if event.detail else "")
        self.beat(line, (f"{event.stage} {event.state}", f"{event.side}: {event.detail}".rstrip(": ")))

    @contextmanager
    def beating(self) -> Iterator[None]:
        stop = threading.Event()

        def every() -> None:
            while not stop.wait(self.env.heartbeat_s):
                try:
                    self.beat()
                except Exception:   # a missed beat is harmless; a long outage makes the job re-queue
                    log.warning("job %s: heartbeat failed", self.job_id, exc_info=True)

        thread = threading.Thread(target=every, daemon=True, name=f"heartbeat-{self.job_id}")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
