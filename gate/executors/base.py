"""The executor interface, the pipeline seam, and running one claimed job to a stored verdict."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from gate.domain.job import ProgressEvent, RunOptions
from gate.domain.server_paths import hide
from gate.domain.reuse import ProfileLookup, ReuseLookup, ReusedMeasurement, ReusedProfile
from gate.errors import JobCancelled
from gate.job_folders import remove
from gate.notify import Notifier
from gate.services.announce import announce
from gate.storage import claims, timing_methods
from gate.storage.reuse import find_measured, find_profile
from gate.storage.models import Job
from gate.storage.outcomes import Outcome, store_error, store_outcome
from gate.storage.unit import UnitOfWork

if TYPE_CHECKING:
    from gate.executors.spare import Spares

log = logging.getLogger(__name__)

TEST_PIPELINE_ENV = "GATE_TEST_PIPELINE"


class GateJob(Protocol):
    """`gate.executors.job.gate_job`: one kernel of one revision, through every stage, to a verdict."""

    def __call__(self, *, repo: str, sha: str, base_sha: str | None, kernel: str, data_dir: Path,
                 options: RunOptions, mirror: Any, on_event: Callable[[ProgressEvent], None],
                 cancel: threading.Event, kept_methods: dict[str, str] | None = None,
                 reuse: ReuseLookup | None = None, reuse_profile: ProfileLookup | None = None,
                 spares: Spares | None = None) -> Outcome: ...


def load_gate_job() -> GateJob:
    """The real pipeline, or (test seam, only when set) `GATE_TEST_PIPELINE=module:function`."""
    spec = os.environ.get(TEST_PIPELINE_ENV)
    if spec:
        module, _, name = spec.partition(":")
        log.warning("%s=%s: jobs run a test pipeline, not the real one", TEST_PIPELINE_ENV, spec)
        return getattr(importlib.import_module(module), name)
    from gate.executors.job import gate_job

    return gate_job


@dataclass
class JobEnvironment:
    """Everything a worker needs to run a job, wherever it runs (server thread or Celery worker)."""

    session_factory: sessionmaker[Session]
    gate_job: GateJob
    data_dir: Path
    options: RunOptions
    mirror: Any = None
    heartbeat_s: float = claims.HEARTBEAT_S
    # Who hears of each stored verdict, composed by whoever started this worker (no listeners: none).
    notifier: Notifier = field(default_factory=Notifier)
    # Start each job's child before the job, on a GPU (`gate.executors.spare`; GATE_SPARE_CHILD).
    spare_child: bool = False


def run_claimed(env: JobEnvironment, job_id: int, attempt: int, cancel: threading.Event | None = None,
                spares: Spares | None = None) -> None:
    """Run a job this worker has claimed and store its outcome. Never raises for a job's failure:
    a GateError or any unexpected exception becomes verdict `error` with the message.

    `cancel` stops the job (its child's process group is killed, nothing is stored): set by the
    executor when the job is cancelled, or here when a heartbeat finds the job no longer this
    attempt's (cancelled, or re-queued as an orphan and taken by another worker).
    `spares`: this worker thread's child started ahead of its next job (`gate.executors.spare`)."""
    cancel = cancel or threading.Event()
    with env.session_factory() as session:
        job = session.get(Job, job_id)
        rev = job.revision
        call = dict(repo=rev.repository.url, sha=rev.sha, base_sha=rev.base_sha, kernel=job.kernel)
        kept = timing_methods.kept_methods(session, rev.repository_id, job.kernel, job.gpu_kind)
        if kept:   # issue 25: the history's timing method per shape; the first job chooses
            call["kept_methods"] = kept
        if not rev.remeasure:
            call.update(_lookups(env, rev.repository_id))
    if spares is not None:
        call["spares"] = spares
    # One folder per attempt: a re-queued job may run again elsewhere while this attempt winds down.
    work_dir = Path(env.data_dir).resolve() / "jobs" / str(job_id) / str(attempt)
    work_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeats, args=(env, job_id, attempt, stop, cancel), daemon=True,
                            name=f"heartbeat-{job_id}")
    beat.start()

    def on_event(event: ProgressEvent) -> None:
        line = f"{event.side} {event.stage} {event.state}" + (f": {event.detail}" if event.detail else "")
        with env.session_factory() as s:
            if not claims.heartbeat(s, job_id, attempt, progress=line,
                                    event=(f"{event.stage} {event.state}", f"{event.side}: {event.detail}".rstrip(": "))):
                cancel.set()

    try:
        _run_and_store(env, job_id, attempt, call, work_dir, on_event, stop, beat, cancel)
    finally:   # the job's checkouts, box folder and copies: the artifact store keeps what counts
        remove(work_dir)
        try:
            work_dir.parent.rmdir()
        except OSError:   # another attempt's folder is still there
            pass


def _run_and_store(env: JobEnvironment, job_id: int, attempt: int, call: dict, work_dir: Path,
                   on_event: Callable[[ProgressEvent], None], stop: threading.Event, beat: threading.Thread,
                   cancel: threading.Event) -> None:
    try:
        outcome = env.gate_job(**call, data_dir=work_dir, options=env.options, mirror=env.mirror, on_event=on_event,
                               cancel=cancel)
    except JobCancelled as exc:   # the row already says what happened (cancelled, or re-queued)
        log.info("job %s attempt %s stopped: %s", job_id, attempt, exc)
        return
    except Exception as exc:   # GateError or a bug: the job ends as `error`, the worker carries on
        log.exception("job %s failed in the gate", job_id)
        stop.set()
        with env.session_factory() as s:
            announce(UnitOfWork(s), env.notifier,
                     store_error(s, job_id, attempt, hide(f"{type(exc).__name__}: {exc}", env.data_dir)))
        return
    finally:
        stop.set()
        beat.join()
    try:
        with env.session_factory() as s:
            notice = store_outcome(s, job_id, attempt, outcome, env.data_dir)
    except Exception as exc:   # e.g. a result that does not fit the schema: still an `error`, not lost
        log.exception("job %s: storing the outcome failed", job_id)
        with env.session_factory() as s:
            notice = store_error(s, job_id, attempt, hide(f"storing the result failed: {type(exc).__name__}: {exc}",
                                                           env.data_dir))
    with env.session_factory() as s:     # only now, with the verdict committed, does notify hear of it
        announce(UnitOfWork(s), env.notifier, notice)


def _lookups(env: JobEnvironment, repository_id: int) -> dict[str, ReuseLookup | ProfileLookup]:
    """The history's answers for jobs of this repository (docs/reuse.md), as `gate_job`'s arguments:
    "measured already?" (the whole pair) and "this baseline's profile measured already, as an earlier
    job's candidate?"; none when reuse is off (`GATE_REUSE_MAX_AGE_H=0`)."""
    max_age_h = env.options.reuse_max_age_h
    if max_age_h <= 0:
        return {}

    def asking(find: Callable[..., ReusedMeasurement | ReusedProfile | None]) -> Callable[[str, str], Any]:
        def ask(kernel: str, key: str) -> ReusedMeasurement | ReusedProfile | None:
            with env.session_factory() as s:
                return find(s, env.data_dir, repository_id=repository_id, kernel=kernel, key=key,
                            max_age_h=max_age_h)
        return ask

    return {"reuse": asking(find_measured), "reuse_profile": asking(find_profile)}


def _heartbeats(env: JobEnvironment, job_id: int, attempt: int, stop: threading.Event,
                cancel: threading.Event) -> None:
    while not stop.wait(env.heartbeat_s):
        try:
            with env.session_factory() as s:
                if not claims.heartbeat(s, job_id, attempt):
                    cancel.set()     # cancelled, or re-queued and taken by another worker: stop
        except Exception:   # a missed beat is harmless; a long outage makes the job re-queue
            log.warning("job %s: heartbeat failed", job_id, exc_info=True)
