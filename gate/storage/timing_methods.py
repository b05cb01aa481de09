"""The timing method each (shape, dtype) of a kernel's history was timed with, for the next job.

A softmax shape near the graph/events threshold was timed by events (53.84 µs) in one job and by
graph (51.30 µs) in the next, 5 % apart for the same binary (issue 25). The first job of a
(repository, kernel, GPU kind) chooses per shape; every later job is handed that choice
(`JobRequest.kept_methods`) and keeps it, unless the kept graph can no longer time the kernel
honestly (the bench then says so in the shape's `method_note`). The GPU kind stands in for the
environment: the parent does not know the child's driver or clock policy before it runs, and the
method a kernel needs follows its speed on a GPU model, not the driver.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gate.domain.job import method_key
from gate.domain.names import Stage
from gate.domain.results import StageStatus
from gate.storage.models import Job, Revision, StageRecord

METHODS = ("graph", "events")


def kept_methods(session: Session, repository_id: int, kernel: str, gpu_kind: str) -> dict[str, str]:
    """`method_key(shape, dtype)` -> the method of the oldest passed bench that timed it ({} when none)."""
    payloads = session.execute(
        select(StageRecord.payload).join(Job, Job.id == StageRecord.job_id)
        .join(Revision, Revision.id == Job.revision_id)
        .where(Revision.repository_id == repository_id, Job.kernel == kernel, Job.gpu_kind == gpu_kind,
               StageRecord.stage == Stage.BENCH.value, StageRecord.status == StageStatus.PASSED.value)
        .order_by(Job.id)).scalars()
    kept: dict[str, str] = {}
    for payload in payloads:
        for shape in (payload or {}).get("shapes", []):
            method = shape.get("method")
            if method in METHODS:
                kept.setdefault(method_key(shape.get("shape", ""), shape.get("dtype", "")), method)
    return kept
