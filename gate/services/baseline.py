"""Which revision a candidate is timed against."""

from __future__ import annotations

from gate.domain.verdict import Verdict
from gate.storage.unit import UnitOfWork


def last_accepted_sha(uow: UnitOfWork, revision_id: int) -> str | None:
    """The newest earlier revision of the repository's default branch whose every job ended `accept`."""
    for rev in uow.planning.default_branch_before(revision_id):
        if rev.verdicts and all(v == Verdict.ACCEPT for v in rev.verdicts):
            return rev.sha
    return None


def choose_baseline(uow: UnitOfWork, revision_id: int, *, base_sha: str | None,
                    parent_sha: str | None) -> str | None:
    """`base_sha` when given; else the last fully accepted revision of the default branch; else the parent.

    None only for a root commit with no accepted history: the job then runs without a baseline.
    """
    if base_sha:
        return base_sha
    return last_accepted_sha(uow, revision_id) or parent_sha
