"""The rows of the synthetic sample data (`gate.sample`) and what `gate demo` reads back.

The sample writers choose every number; `uow.samples` only stores them, each revision marked
`source="synthetic"` (the pages say so in their footer). The caller commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select

from gate.domain.names import Side, Stage
from gate.storage.db import Queries
from gate.storage.models import (
    Artifact, Job, JobState, Metric, Repository, Revision, RevisionStatus, StageRecord, VerdictRecord,
)

SYNTHETIC = "synthetic"         # Revision.source of every sample revision
SAMPLE_FILES = "sample"         # the sample's artifact files, relative to the data directory

# (side, stage, status, reason, payload) of one stage, payload as `to_json(<Stage>Result)`
StageRow = tuple[str, str, str, str | None, dict[str, Any]]


@dataclass(frozen=True)
class JudgedRevision:
    """One commit of the synthetic history, on `main` after the one before it, measured against its parent."""

    sha: str
    parent_sha: str | None
    author: str
    message: str
    committed_at: datetime
    submitted_at: datetime


@dataclass(frozen=True)
class JudgedJob:
    """One finished job of the synthetic history and its verdict; `stages` may be empty."""

    revision_id: int
    kernel: str
    gpu_kind: str
    worker: str
    queued_at: datetime
    started_at: datetime
    finished_at: datetime
    verdict: str
    reason: str
    rules: list[Any]
    fingerprint: dict[str, Any]
    stages: Sequence[StageRow] = ()


class Samples(Queries):
    """`uow.samples`."""

    def holds_revisions(self) -> bool:
        """Whether the database holds any revision (the seed refuses to mix with real data)."""
        return self._session.scalar(select(Revision.id).limit(1)) is not None

    def add_sample_repository(self, *, name: str, url: str) -> int:
        repo = Repository(name=name, url=url)
        self._session.add(repo)
        self._session.flush()
        return repo.id

    def add_judged_revisions(self, repository_id: int, revisions: Sequence[JudgedRevision]) -> list[int]:
        """Store `revisions` as done, in order (one flush): one line of `main`, so each one's
        place is its first-parent depth, 1 for the first (as planning would find it); returns their ids."""
        rows = [Revision(repository_id=repository_id, sha=r.sha, branch="main", parent_sha=r.parent_sha,
                         base_sha=r.parent_sha, author=r.author, message=r.message, committed_at=r.committed_at,
                         submitted_at=r.submitted_at, status=RevisionStatus.DONE, source=SYNTHETIC,
                         position=depth, on_branch=True)
                for depth, r in enumerate(revisions, start=1)]
        self._session.add_all(rows)
        self._session.flush()
        return [r.id for r in rows]

    def add_judged_jobs(self, jobs: Sequence[JudgedJob]) -> list[int]:
        """Finished jobs with their verdicts (and, for those with stages, stage rows and a build-log
        artifact) in one bulk insert per table: a 100,000-revision history holds 400,000 jobs, which
        one flush per job would take an hour to write. Returns the job ids, in order."""
        if not jobs:
            return []
        ids = list(self._session.scalars(
            insert(Job).returning(Job.id, sort_by_parameter_order=True),
            [dict(revision_id=j.revision_id, kernel=j.kernel, gpu_kind=j.gpu_kind, state=JobState.DONE.value,
                  attempts=1, worker=j.worker, queued_at=j.queued_at, started_at=j.started_at,
                  finished_at=j.finished_at) for j in jobs]))
        self._session.execute(insert(VerdictRecord), [
            dict(job_id=i, revision_id=j.revision_id, kernel=j.kernel, gpu_kind=j.gpu_kind, verdict=j.verdict,
                 reason=j.reason, rules=j.rules, fingerprint=j.fingerprint, created_at=j.finished_at)
            for i, j in zip(ids, jobs)])
        staged = [(i, j) for i, j in zip(ids, jobs) if j.stages]
        if staged:
            self._session.execute(insert(StageRecord), [
                dict(job_id=i, side=side, stage=stage, status=status, reason=stage_reason,
                     duration_s=payload.get("duration_s"), payload=payload)
                for i, j in staged for side, stage, status, stage_reason, payload in j.stages])
            # Under sample/ of the data directory, beside the sample's database, apart from real jobs'
            # files; `sample_files` says what to write there.
            self._session.execute(insert(Artifact), [
                dict(job_id=i, kind="build_log", size_bytes=0, path=f"{SAMPLE_FILES}/jobs/{i}/build.log")
                for i, _ in staged])
        return ids

    def insert_metrics(self, rows: list[dict[str, Any]]) -> None:
        """Metric rows (dicts of `Metric` columns) in one bulk insert: a long history holds millions."""
        self._session.execute(insert(Metric.__table__), rows)     # Core: the ORM bulk path costs as much again

    def add_running_revision(self, *, repository_id: int, sha: str, author: str, message: str,
                             at: datetime, kernels: Sequence[str], gpu_kind: str, worker: str,
                             started_at: datetime, progress: str, position: int) -> None:
        """One revision in flight, at first-parent depth `position` of `main`: the first kernel's job
        running on `worker` with `progress`, the rest queued."""
        rev = Revision(repository_id=repository_id, sha=sha, branch="main", author=author, committed_at=at,
                       submitted_at=at, message=message, status=RevisionStatus.RUNNING, source=SYNTHETIC,
                       position=position, on_branch=True)
        self._session.add(rev)
        self._session.flush()
        for i, kernel in enumerate(kernels):
            running = i == 0
            self._session.add(Job(
                revision_id=rev.id, kernel=kernel, gpu_kind=gpu_kind, queued_at=at,
                state=JobState.RUNNING if running else JobState.QUEUED, attempts=1 if running else 0,
                worker=worker if running else None, started_at=started_at if running else None,
                progress=progress if running else None))

    def append_judged_revision(self, kernel: str, *, verdict: str | None = None,
                               reason: str | None = None, metrics: list[dict] | None = None,
                               sha: str | None = None, message: str | None = None,
                               gpu_kind: str | None = None) -> int:
        """One more revision of `kernel` after its newest, judged on that one's GPU kind (or `gpu_kind`),
        a copy of its verdict and metrics unless `verdict` (with `reason` and an empty rule table) and
        `metrics` (dicts of shape, name, series, value, unit) replace them; its id. The caller commits."""
        last = self._session.scalars(select(VerdictRecord).where(VerdictRecord.kernel == kernel)
                                     .order_by(VerdictRecord.revision_id.desc()).limit(1)).one()
        old = self._session.get(Revision, last.revision_id)
        rev = Revision(repository_id=old.repository_id, sha=sha or f"{old.id + 1:040x}", branch=old.branch,
                       message=old.message if message is None else message, committed_at=old.committed_at,
                       status=RevisionStatus.DONE, source=old.source)
        self._session.add(rev)
        self._session.flush()
        gpu_kind = gpu_kind or last.gpu_kind
        job = Job(revision_id=rev.id, kernel=kernel, gpu_kind=gpu_kind, state=JobState.DONE)
        self._session.add(job)
        self._session.flush()
        self._session.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel=kernel, gpu_kind=gpu_kind,
                                        verdict=verdict or last.verdict,
                                        reason=last.reason if verdict is None else (reason or verdict),
                                        rules=last.rules if verdict is None else []))
        if metrics is None:
            metrics = [{"shape": m.shape, "name": m.name, "series": m.series, "value": m.value, "unit": m.unit,
                        "direction": m.direction}
                       for m in self._session.scalars(select(Metric).where(Metric.revision_id == last.revision_id,
                                                                           Metric.kernel == kernel))]
        self._session.add_all(Metric(revision_id=rev.id, job_id=job.id, kernel=kernel, gpu_kind=gpu_kind, **m)
                              for m in metrics)
        return rev.id

    def job_verdicts(self, revision_id: int) -> list[tuple[str, str | None, str | None]]:
        """(kernel, verdict, reason) of each job of a revision in job order; None where no verdict is stored."""
        rows = self._session.execute(
            select(Job.kernel, VerdictRecord.verdict, VerdictRecord.reason)
            .join(VerdictRecord, VerdictRecord.job_id == Job.id, isouter=True)
            .where(Job.revision_id == revision_id).order_by(Job.id)).all()
        return [(kernel, verdict, reason) for kernel, verdict, reason in rows]

    def revision_error(self, revision_id: int) -> str | None:
        """Why the revision could not be planned, if it could not."""
        return self._session.get(Revision, revision_id).error

    def sample_files(self) -> list[tuple[int, str, str]]:
        """(artifact id, path, text) of each build log the sample recorded: the text is its build
        stage's log, so a page's "build log" link opens what the page shows."""
        rows = self._session.execute(
            select(Artifact.id, Artifact.path, StageRecord.payload)
            .join(StageRecord, (StageRecord.job_id == Artifact.job_id) & (StageRecord.stage == Stage.BUILD.value)
                        & (StageRecord.side == Side.CANDIDATE.value))
            .join(Job, Job.id == Artifact.job_id).join(Revision, Revision.id == Job.revision_id)
            .where(Artifact.kind == "build_log", Revision.source == SYNTHETIC)
        ).all()
        return [(aid, path, (payload or {}).get("log") or "") for aid, path, payload in rows]

    def set_artifact_size(self, artifact_id: int, size_bytes: int) -> None:
        self._session.get(Artifact, artifact_id).size_bytes = size_bytes
