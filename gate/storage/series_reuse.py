"""Which held verdict rows reused an earlier job's figures: the kernel page rings those points.

Asked per request, the question joined every job of the kernel (~0.6 s at 100,000 revisions on
SQLite, most of the history API's budget) for the handful that reused. A job's reuse is decided
before its verdict is stored, so the answer for a verdict row never changes: the series cache
keeps it beside the rows and asks only about the verdicts it reads (`series_cache.py`).
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.orm import aliased

from gate.domain.reuse import reused_line
from gate.storage.models import Job, Revision, VerdictRecord

_origin, _origin_rev = aliased(Job), aliased(Revision)
_REUSED = (select(Job.revision_id, _origin_rev.sha, _origin.id, _origin.finished_at)
           .select_from(VerdictRecord)
           .join(Job, VerdictRecord.job_id == Job.id)
           .join(_origin, Job.reused_from_job_id == _origin.id)
           .join(_origin_rev, _origin.revision_id == _origin_rev.id)
           .where(VerdictRecord.kernel == bindparam("kernel"), VerdictRecord.gpu_kind == bindparam("gpu_kind"),
                  VerdictRecord.revision_id > bindparam("after"), _origin.finished_at.is_not(None)))


def read_reused(conn: Connection, kernel: str, gpu_kind: str, after: int) -> dict[int, str]:
    """revision id -> where its figures came from, for the verdicts of `kernel` on `gpu_kind` above
    revision `after` whose job reused an earlier job's figures (`domain.reuse.reused_line`)."""
    rows = conn.execute(_REUSED, {"kernel": kernel, "gpu_kind": gpu_kind, "after": after})
    return {rev_id: reused_line(sha, job_id, at.isoformat()) for rev_id, sha, job_id, at in rows}
