"""Job ownership: the atomic claim, heartbeats, and the re-queue of jobs whose worker died.

A claim is one conditional UPDATE (`... WHERE id = :id AND state = 'queued'`) committed on its own:
of two workers racing for a row, exactly one sees `rowcount == 1`. The same claim serves the local
executor (next queued job) and Celery (a job by id, so a redelivered message cannot run it twice).
The executors reach these through their unit of work's `Claims` group, with the claimed job's order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta

from sqlalchemy import and_, or_, select, update

from gate.domain.job import JobOrder
from gate.nvidia.devices import Gpu
from gate.storage.db import Queries
from gate.storage.models import Job, JobEvent, JobState, Revision, RevisionStatus, utcnow
from gate.storage.timing_methods import kept_methods

HEARTBEAT_S = 5.0
STALE_AFTER_S = 60.0          # a RUNNING job whose heartbeat is older than this has lost its worker


def _claimable(stale_after_s: float):  # noqa: ANN202 (SQL expression)
    stale = utcnow() - timedelta(seconds=stale_after_s)
    return or_(
        Job.state == JobState.QUEUED,
        and_(Job.state == JobState.RUNNING, Job.heartbeat_at < stale),
    )


class Claims(Queries):
    """The executors' group of a unit of work (`uow.group(Claims)`): each method commits on its own."""

    def claim(self, job_id: int, *, worker: str, stale_after_s: float = STALE_AFTER_S,
              gpu: Gpu | None = None) -> int | None:
        """Take job `job_id` if it is queued (or running with a dead worker), for a slot on `gpu` (None:
        a worker without one); the attempt number, or None."""
        session = self._session
        now = utcnow()
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, _claimable(stale_after_s))
            .values(state=JobState.RUNNING, attempts=Job.attempts + 1, worker=worker,
                    started_at=now, heartbeat_at=now, progress="claimed",
                    gpu_index=gpu.index if gpu else None, gpu_uuid=gpu.uuid if gpu else None)
            .execution_options(synchronize_session=False)
        )
        if result.rowcount != 1:
            session.rollback()
            return None
        attempts, revision_id = session.execute(
            select(Job.attempts, Job.revision_id).where(Job.id == job_id)
        ).one()
        on = f", {gpu}" if gpu else ""
        session.add(JobEvent(job_id=job_id, state="claimed", detail=f"worker {worker}{on}, attempt {attempts}", at=now))
        session.execute(
            update(Revision).where(Revision.id == revision_id, Revision.status == RevisionStatus.QUEUED)
            .values(status=RevisionStatus.RUNNING)
        )
        session.commit()
        return attempts

    def claim_next(self, *, worker: str, gpu_kinds: Sequence[str] = ("any",),
                   gpu: Gpu | None = None) -> tuple[int, int] | None:
        """Take the oldest queued job this worker (on `gpu`) may run: (job id, attempt), or None."""
        candidates = self._session.scalars(
            select(Job.id).where(Job.state == JobState.QUEUED, Job.gpu_kind.in_(list(gpu_kinds)))
            .order_by(Job.id).limit(8)
        ).all()
        self._session.rollback()   # end the read transaction before the write (SQLite lock upgrade)
        for job_id in candidates:
            attempt = self.claim(job_id, worker=worker, gpu=gpu)
            if attempt is not None:
                return job_id, attempt
        return None

    def heartbeat(self, job_id: int, attempt: int, *, progress: str | None = None,
                  event: tuple[str, str] | None = None) -> bool:
        """Refresh a running job's heartbeat (and progress line). False: the job is no longer ours."""
        values: dict[str, object] = {"heartbeat_at": utcnow()}
        if progress is not None:
            values["progress"] = progress
        result = self._session.execute(
            update(Job).where(Job.id == job_id, Job.state == JobState.RUNNING, Job.attempts == attempt)
            .values(**values).execution_options(synchronize_session=False)
        )
        owned = result.rowcount == 1
        if owned and event is not None:
            self._session.add(JobEvent(job_id=job_id, state=event[0], detail=event[1]))
        self._session.commit()
        return owned

    def requeue_orphans(self, *, worker_prefix: str | None = None, stale_after_s: float = STALE_AFTER_S,
                        dead_worker: Callable[[str], bool] | None = None) -> list[int]:
        """Put RUNNING jobs whose worker is gone back in the queue; their ids.

        A worker is gone when its heartbeat is older than `stale_after_s`, when its id starts with
        `worker_prefix`, or when `dead_worker(id)` says so (a process of this host that no longer exists).
        """
        session = self._session
        stale = utcnow() - timedelta(seconds=stale_after_s)
        rows = session.execute(select(Job.id, Job.worker, Job.heartbeat_at).where(Job.state == JobState.RUNNING)).all()
        session.rollback()
        requeued = []
        for job_id, worker, beat in rows:
            why = ("heartbeat older than %.0f s" % stale_after_s if beat is None or beat < stale
                   else "its worker is gone" if (worker_prefix and (worker or "").startswith(worker_prefix))
                   or (dead_worker is not None and worker and dead_worker(worker)) else None)
            if why is None:
                continue
            result = session.execute(
                update(Job).where(Job.id == job_id, Job.state == JobState.RUNNING, Job.worker == worker)
                .values(state=JobState.QUEUED, worker=None, progress="requeued")
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 1:
                session.add(JobEvent(job_id=job_id, state="requeued", detail=f"worker {worker}: {why}"))
                requeued.append(job_id)
        session.commit()
        return requeued

    def queued(self) -> list[tuple[int, str]]:
        """(job id, GPU kind) of every queued job: what a distributed executor has to send."""
        return [(job_id, gpu_kind) for job_id, gpu_kind in
                self._session.execute(select(Job.id, Job.gpu_kind).where(Job.state == JobState.QUEUED)).all()]

    def order(self, job_id: int) -> JobOrder:
        """What the executor gates for job `job_id`: its revision, kernel and the history's timing methods."""
        job = self._session.get(Job, job_id)
        rev = job.revision
        return JobOrder(repo=rev.repository.url, sha=rev.sha, base_sha=rev.base_sha, kernel=job.kernel,
                        gpu_kind=job.gpu_kind, remeasure=rev.remeasure, repository_id=rev.repository_id,
                        kept_methods=kept_methods(self._session, rev.repository_id, job.kernel, job.gpu_kind))
