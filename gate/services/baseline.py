"""Which revision a candidate is timed against."""

from __future__ import annotations

from sqlalchemy.orm import Session

from gate.domain.verdict import Verdict
from gate.storage.models import Revision
from gate.storage.revisions import earlier_default_branch_revisions


def last_accepted_sha(session: Session, revision: Revision) -> str | None:
    """The newest earlier revision of the repository's default branch whose every job ended `accept`."""
    for rev in earlier_default_branch_revisions(session, revision):
        if rev.jobs and all(j.verdict is not None and j.verdict.verdict == Verdict.ACCEPT for j in rev.jobs):
            return rev.sha
    return None


def choose_baseline(session: Session, revision: Revision, *, parent_sha: str | None) -> str | None:
    """`base_sha` when given; else the last fully accepted revision of the default branch; else the parent.

    None only for a root commit with no accepted history: the job then runs without a baseline.
    """
    if revision.base_sha:
        return revision.base_sha
    return last_accepted_sha(session, revision) or parent_sha
