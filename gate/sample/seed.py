"""Write a synthetic but realistic judged history: revisions, jobs, verdicts, metrics, stages.

SYNTHETIC SAMPLE DATA: every number here is generated, none was measured. Revisions carry
`source="synthetic"` and the pages say so in their footer.

The story: three kernels on an H100 (and `flashcore_wmma` also on an A100), gated commit by commit.
`flashcore_wmma` gets faster in one step when its K/V tiles move to `ldmatrix` (the change point),
a few revisions regress and are rejected, one is inconclusive, one could not be profiled.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from gate.sample.judging import judge_commit
from gate.sample.kernel_model import KernelModel
from gate.sample.kernels import KERNELS, SHAPES
from gate.sample.story import revision_story
from gate.storage.models import (
    Artifact, Job, JobState, Metric, Repository, Revision, RevisionStatus, StageRecord, VerdictRecord,
)

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"


@dataclass(frozen=True)
class SeedSummary:
    revisions: int
    jobs: int
    metrics: int


def seed_judged_history(session: Session, *, revisions: int = 60, kernels: list[str] | None = None,
                 a100: bool = True, stages: bool = True, queue: bool = True,
                 seed: int = 20250214) -> SeedSummary:
    """Fill an empty database with `revisions` synthetic revisions of the chosen kernels."""
    rng = random.Random(seed)
    names = kernels or list(KERNELS)
    repo = Repository(name="flashcore (synthetic sample data)", url="synthetic://flashcore")
    session.add(repo)
    session.flush()
    start = datetime(2025, 1, 6, 9, 0)
    story = revision_story(revisions, rng)
    gpus = {n: [H100, A100] if (a100 and n == "flashcore_wmma") else [H100] for n in names}
    # One accepted state per (kernel, GPU): each GPU's job compares against its own baseline.
    models = {(n, g): KernelModel(n, KERNELS[n], rng, stages) for n in names for g in gpus[n]}
    n_jobs = n_metrics = 0
    prev_sha = None
    rev_rows, metric_rows = [], []
    for i, event in enumerate(story):
        sha = hashlib.sha1(f"{seed}:{i}".encode()).hexdigest()
        rev = Revision(repository_id=repo.id, sha=sha, branch="main", parent_sha=prev_sha,
                       base_sha=prev_sha, author=event.author, message=event.message,
                       committed_at=start + timedelta(hours=7 * i),
                       submitted_at=start + timedelta(hours=7 * i, minutes=2),
                       status=RevisionStatus.DONE, source="synthetic")
        session.add(rev)
        rev_rows.append(rev)
        prev_sha = sha
    session.flush()
    for rev, event in zip(rev_rows, story):
        for name in names:
            for gpu in gpus[name]:
                job = Job(revision_id=rev.id, kernel=name, gpu_kind=gpu, state=JobState.DONE,
                          attempts=1, worker=f"gpu-{'h100' if gpu == H100 else 'a100'}-0",
                          queued_at=rev.submitted_at,
                          started_at=rev.submitted_at + timedelta(minutes=1),
                          finished_at=rev.submitted_at + timedelta(minutes=9))
                session.add(job)
                session.flush()
                n_jobs += 1
                outcome = judge_commit(models[name, gpu], event, gpu, rev.sha)
                session.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel=name,
                                          gpu_kind=gpu, verdict=outcome.verdict,
                                          reason=outcome.reason, rules=outcome.rules,
                                          fingerprint=outcome.fingerprint,
                                          created_at=job.finished_at))
                metric_rows.extend(dict(m, revision_id=rev.id, job_id=job.id, kernel=name,
                                        gpu_kind=gpu) for m in outcome.metrics)
                if stages:
                    for side, stage, status, reason, payload in outcome.stages:
                        session.add(StageRecord(job_id=job.id, side=side, stage=stage,
                                                status=status, reason=reason,
                                                duration_s=payload.get("duration_s"),
                                                payload=payload))
                    session.add(Artifact(job_id=job.id, kind="build_log",
                                         path=f"jobs/{job.id}/build.log", size_bytes=0))
        if len(metric_rows) > 50_000:
            session.execute(insert(Metric), metric_rows)
            n_metrics += len(metric_rows)
            metric_rows = []
    if metric_rows:
        session.execute(insert(Metric), metric_rows)
        n_metrics += len(metric_rows)
    if queue:
        n_jobs += _add_queue(session, repo.id, start + timedelta(hours=7 * len(story)), names, rng)
    session.commit()
    return SeedSummary(len(story) + (1 if queue else 0), n_jobs, n_metrics)


def _add_queue(session: Session, repo_id: int, at: datetime, names: list[str],
               rng: random.Random) -> int:
    """One revision in flight: one job running (with progress), the others waiting."""
    rev = Revision(repository_id=repo_id, sha=hashlib.sha1(b"in-flight").hexdigest(),
                   branch="main", author="Mei Tanaka", committed_at=at, submitted_at=at,
                   message="Prefetch the next K tile with cp.async while computing S = QK^T",
                   status=RevisionStatus.RUNNING, source="synthetic")
    session.add(rev)
    session.flush()
    for i, name in enumerate(names):
        running = i == 0
        session.add(Job(
            revision_id=rev.id, kernel=name, gpu_kind=H100, queued_at=at,
            state=JobState.RUNNING if running else JobState.QUEUED,
            attempts=1 if running else 0, worker="gpu-h100-0" if running else None,
            started_at=at + timedelta(minutes=1) if running else None,
            progress=f"bench: {SHAPES['attention'][1]} round {rng.randint(8, 30)}/40"
            if running else None))
    return len(names)


def append_judged_revision(session: Session, kernel: str, *, verdict: str | None = None,
                    reason: str | None = None, metrics: list[dict] | None = None,
                    sha: str | None = None, message: str | None = None) -> Revision:
    """One more revision of `kernel` after its newest, judged on that one's GPU kind (sample data).

    By default a copy of the newest revision's verdict and metrics; `verdict` (with `reason`, and an
    empty rule table) and `metrics` (dicts of shape, name, series, value, unit) replace them. The
    caller commits."""
    last = session.scalars(select(VerdictRecord).where(VerdictRecord.kernel == kernel)
                           .order_by(VerdictRecord.revision_id.desc()).limit(1)).one()
    old = session.get(Revision, last.revision_id)
    rev = Revision(repository_id=old.repository_id, sha=sha or f"{old.id + 1:040x}", branch=old.branch,
                   message=old.message if message is None else message, committed_at=old.committed_at, status=RevisionStatus.DONE,
                   source=old.source)
    session.add(rev)
    session.flush()
    job = Job(revision_id=rev.id, kernel=kernel, gpu_kind=last.gpu_kind, state=JobState.DONE)
    session.add(job)
    session.flush()
    session.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel=kernel, gpu_kind=last.gpu_kind,
                              verdict=verdict or last.verdict,
                              reason=last.reason if verdict is None else (reason or verdict),
                              rules=last.rules if verdict is None else []))
    if metrics is None:
        metrics = [{"shape": m.shape, "name": m.name, "series": m.series, "value": m.value, "unit": m.unit,
                    "direction": m.direction}
                   for m in session.scalars(select(Metric).where(Metric.revision_id == last.revision_id,
                                                                 Metric.kernel == kernel))]
    session.add_all(Metric(revision_id=rev.id, job_id=job.id, kernel=kernel, gpu_kind=last.gpu_kind, **m)
                    for m in metrics)
    return rev
