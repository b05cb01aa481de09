"""Which revision a candidate is timed against."""

from __future__ import annotations

from gate.domain.verdict import Verdict
from gate.storage.unit import UnitOfWork


def choose_baseline(uow: UnitOfWork, revision_id: int, *, base_sha: str | None,
                    parent_sha: str | None) -> str | None:
    """`base_sha` when given; else the newest earlier revision of the repository's default branch whose
    every job ended `accept`; else the parent. None only for a root commit with no accepted history:
    the job then runs without a baseline."""
    if base_sha:
        return base_sha
    for rev in uow.planning.default_branch_before(revision_id):
        if rev.verdicts and all(v == Verdict.ACCEPT for v in rev.verdicts):
            return rev.sha
    return parent_sha
