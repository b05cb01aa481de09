"""The history's side of measurement reuse (docs/reuse.md, which gives the rule's reasons): which
earlier job may stand for a new one, and whose candidate profile may stand for a later baseline's.
A job's parent asks both at once (`RepositoryHistory`, through the unit of work's `ReuseAnswers`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from gate.domain import JobResult, StageStatus, Verdict
from gate.domain.clock import utcnow
from gate.domain.codec import from_json
from gate.domain.reuse import HistoryAnswers, Provenance, ReusedMeasurement, ReusedProfile, ReuseKeys
from gate.storage import artifacts as artifact_files
from gate.storage.db import Queries
from gate.storage.models import Artifact, Job, JobState, Revision, VerdictRecord

if TYPE_CHECKING:     # the unit's module lists this one's group: a type here, not an import
    from gate.storage.unit import Store

log = logging.getLogger(__name__)

JUDGED = (Verdict.ACCEPT.value, Verdict.REJECT.value)
RESULT_KIND = "result"   # the artifact `outcomes.store_outcome` writes: {"result": ..., "verdict": ...}


def find_measured(session: Session, data_dir: Path, *, repository_id: int, kernel: str, key: str,
                  max_age_h: float) -> ReusedMeasurement | None:
    """The newest judged job of `kernel` in this repository that measured inputs with reuse key `key`
    within `max_age_h` hours, with its stored result; None when there is none (or `max_age_h` is 0)."""
    found = _newest_judged(session, data_dir, Job.reuse_key, key, repository_id=repository_id,
                           kernel=kernel, max_age_h=max_age_h)
    return None if found is None else ReusedMeasurement(found[1], found[0])


def find_profile(session: Session, data_dir: Path, *, repository_id: int, kernel: str, key: str,
                 max_age_h: float) -> ReusedProfile | None:
    """The profile of the newest judged job of `kernel` in this repository whose *candidate* side had
    the side key `key` (`gate.executors.reuse_key.side_key`), measured within `max_age_h` hours, when that
    profile passed: a later job whose baseline has this key takes it as its baseline's profile.
    None when there is none (or `max_age_h` is 0)."""
    found = _newest_judged(session, data_dir, Job.candidate_key, key, repository_id=repository_id,
                           kernel=kernel, max_age_h=max_age_h,
                           usable=lambda r: r.candidate.profile is not None
                           and r.candidate.profile.status is StageStatus.PASSED)
    return None if found is None else ReusedProfile(found[1].candidate.profile, found[0])


def _newest_judged(session: Session, data_dir: Path, column, key: str, *, repository_id: int, kernel: str,
                   max_age_h: float, usable: Callable[[JobResult], bool] = lambda _r: True,
                   ) -> tuple[Provenance, JobResult] | None:
    """The newest job that measured (did not itself reuse), was judged, is young enough and has
    `column == key`, with its stored result, when `usable(result)`; the one rule both lookups follow."""
    if not key or max_age_h <= 0:
        return None
    since = utcnow() - timedelta(hours=max_age_h)
    row = session.execute(
        select(Job.id, Job.finished_at, Revision.sha, Artifact.path)
        .join(Revision, Job.revision_id == Revision.id)
        .join(VerdictRecord, VerdictRecord.job_id == Job.id)
        .join(Artifact, (Artifact.job_id == Job.id) & (Artifact.kind == RESULT_KIND))
        .where(Job.kernel == kernel, column == key, Job.reused_from_job_id.is_(None),
               Job.state == JobState.DONE, Job.finished_at >= since, Revision.repository_id == repository_id,
               VerdictRecord.verdict.in_(JUDGED))
        .order_by(Job.finished_at.desc(), Job.id.desc()).limit(1)
    ).first()
    if row is None:
        return None
    job_id, finished_at, sha, relative = row
    path = artifact_files.resolve(data_dir, relative)
    if path is None:       # its result file is gone: measure, rather than fail the job
        log.warning("job %s: result file %s is missing; not reused", job_id, relative)
        return None
    try:
        result = from_json(JobResult, json.loads(path.read_text(encoding="utf-8"))["result"])
    except (OSError, ValueError, KeyError) as exc:   # written by an older gate, or damaged
        log.warning("job %s: stored result unreadable (%s); not reused", job_id, exc)
        return None
    if not usable(result):
        return None
    return Provenance(job_id=job_id, sha=sha, measured_at=finished_at.isoformat()), result


class ReuseAnswers(Queries):
    """The executors' group of a unit of work (`uow.group(ReuseAnswers)`)."""

    def answers(self, data_dir: Path, *, repository_id: int, kernel: str, keys: ReuseKeys,
                max_age_h: float) -> HistoryAnswers:
        """The history's answers for a job of `kernel` with `keys` in this repository."""
        where = dict(repository_id=repository_id, kernel=kernel, max_age_h=max_age_h)
        return HistoryAnswers(measured=find_measured(self._session, data_dir, key=keys.job, **where),
                              baseline_profile=find_profile(self._session, data_dir, key=keys.baseline, **where))


@dataclass(frozen=True)
class RepositoryHistory:
    """The history of one repository as a job's parent asks it (`gate.domain.reuse.History`): each
    question in a unit of its own, since the job runs for minutes between them."""

    store: Store
    data_dir: Path
    repository_id: int
    max_age_h: float

    def answers(self, kernel: str, keys: ReuseKeys) -> HistoryAnswers:
        with self.store.unit() as uow:
            return uow.group(ReuseAnswers).answers(self.data_dir, repository_id=self.repository_id, kernel=kernel,
                                                   keys=keys, max_age_h=self.max_age_h)
