"""Write a synthetic but realistic judged history: revisions, jobs, verdicts, metrics, stages
(SYNTHETIC SAMPLE DATA: every number here is generated, none was measured; see `gate.sample`).

The story: three kernels on an H100 (and `flashcore_wmma` also on an A100), gated commit by commit.
`flashcore_wmma` gets faster in one step when its K/V tiles move to `ldmatrix` (the change point),
a few revisions regress and are rejected, one is inconclusive, one could not be profiled.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from gate.sample.judging import judge_commit
from gate.sample.kernel_model import KernelModel, Outcome
from gate.sample.kernels import KERNELS, SHAPES
from gate.sample.story import revision_story
from gate.storage.samples import JudgedJob, JudgedRevision, Samples
from gate.storage.unit import UnitOfWork

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
METRICS_PER_INSERT = 50_000     # bulk-insert the jobs and metric rows in batches of about this many figures


@dataclass(frozen=True)
class SeedSummary:
    revisions: int
    jobs: int
    metrics: int


def seed_judged_history(uow: UnitOfWork, *, revisions: int = 60, kernels: list[str] | None = None,
                        a100: bool = True, stages: bool = True, queue: bool = True,
                        seed: int = 20250214, stage_revisions: int | None = None) -> SeedSummary:
    """Fill an empty database with `revisions` synthetic revisions of the chosen kernels, and commit.

    With `stages`, the newest `stage_revisions` revisions (all, when None) have stage payloads: a
    long history for a benchmark keeps them for the revisions it shows, not the ~1 ms and few KiB
    each of the other jobs costs."""
    rng = random.Random(seed)
    names = kernels or list(KERNELS)
    samples = uow.samples
    repo_id = samples.add_sample_repository(name="flashcore (synthetic sample data)", url="synthetic://flashcore")
    start = datetime(2025, 1, 6, 9, 0)
    story = revision_story(revisions, rng)
    gpus = {n: [H100, A100] if (a100 and n == "flashcore_wmma") else [H100] for n in names}
    # One accepted state per (kernel, GPU): each GPU's job compares against its own baseline.
    models = {(n, g): KernelModel(n, KERNELS[n], rng, stages) for n in names for g in gpus[n]}
    shas = [hashlib.sha1(f"{seed}:{i}".encode()).hexdigest() for i in range(len(story))]
    commits = [JudgedRevision(sha=sha, parent_sha=shas[i - 1] if i else None, author=event.author,
                              message=event.message, committed_at=start + timedelta(hours=7 * i),
                              submitted_at=start + timedelta(hours=7 * i, minutes=2))
               for i, (sha, event) in enumerate(zip(shas, story))]
    revision_ids = samples.add_judged_revisions(repo_id, commits)
    staged_from = 0 if stage_revisions is None else len(story) - stage_revisions
    n_jobs = n_metrics = 0
    jobs: list[JudgedJob] = []
    metric_rows: list[dict] = []
    for i, (rev_id, commit, event) in enumerate(zip(revision_ids, commits, story)):
        for m in models.values():
            m.with_stages = stages and i >= staged_from
        for name in names:
            for gpu in gpus[name]:
                outcome = judge_commit(models[name, gpu], event, gpu, commit.sha)
                jobs.append(_judged_job(rev_id, name, gpu, commit, outcome))
                metric_rows.append(outcome.metrics)
        if sum(map(len, metric_rows)) > METRICS_PER_INSERT or i == len(story) - 1:
            n_jobs, n_metrics = n_jobs + len(jobs), n_metrics + _store(samples, jobs, metric_rows)
            jobs, metric_rows = [], []
    if queue:
        at = start + timedelta(hours=7 * len(story))
        samples.add_running_revision(
            repository_id=repo_id, sha=hashlib.sha1(b"in-flight").hexdigest(), author="Mei Tanaka",
            message="Prefetch the next K tile with cp.async while computing S = QK^T", at=at, kernels=names,
            gpu_kind=H100, worker="gpu-h100-0", started_at=at + timedelta(minutes=1),
            progress=f"bench: {SHAPES['attention'][1]} round {rng.randint(8, 30)}/40",
            position=len(story) + 1)     # the child of the last judged commit
        n_jobs += len(names)
    uow.commit()
    return SeedSummary(len(story) + (1 if queue else 0), n_jobs, n_metrics)


def _judged_job(rev_id: int, kernel: str, gpu: str, commit: JudgedRevision, outcome: Outcome) -> JudgedJob:
    return JudgedJob(revision_id=rev_id, kernel=kernel, gpu_kind=gpu,
                     worker=f"gpu-{'h100' if gpu == H100 else 'a100'}-0", queued_at=commit.submitted_at,
                     started_at=commit.submitted_at + timedelta(minutes=1),
                     finished_at=commit.submitted_at + timedelta(minutes=9), verdict=outcome.verdict,
                     reason=outcome.reason, rules=outcome.rules, fingerprint=outcome.fingerprint,
                     stages=outcome.stages)


def _store(samples: Samples, jobs: list[JudgedJob], metrics: list[list[dict]]) -> int:
    """Write a batch of jobs (`metrics[i]` the figures of `jobs[i]`) in bulk; how many figures."""
    rows = [dict(m, revision_id=job.revision_id, job_id=job_id, kernel=job.kernel, gpu_kind=job.gpu_kind)
            for job_id, job, figures in zip(samples.add_judged_jobs(jobs), jobs, metrics) for m in figures]
    samples.insert_metrics(rows)
    return len(rows)
