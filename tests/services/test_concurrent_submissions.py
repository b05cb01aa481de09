"""Submissions racing each other, on SQLite and PostgreSQL: one repository row, one revision.

Issue 12 found, on PostgreSQL, 6 x 500 (UniqueViolation on `repositories.name`) and a second
repository row (`flash-<hash>`) splitting the history when the first submissions of a new
repository raced; and 488 identical revisions stored for 500 POSTs of one sha. Both tests below
failed before the fix (a second repository row or an IntegrityError; one revision per thread) and
pass after it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from service_fakes import SHA_A, SHA_B
from sqlalchemy import func, select

from gate.services.submissions import submit, submit_revision
from gate.storage.models import Repository, Revision

THREADS = 12


def _race(store, call):  # noqa: ANN001, ANN202
    """Run `call(uow)` in THREADS threads released at once, each with its own unit of work."""
    start = threading.Barrier(THREADS)

    def one(_: int):  # noqa: ANN202
        with store.unit() as uow:
            start.wait()
            return call(uow)

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(one, range(THREADS)))


def test_first_submissions_of_a_new_repository_racing_make_one_repository(store, session_factory):
    """Each thread submits another sha of one new repository: one row, every revision on it."""
    shas = iter([f"{i:040x}" for i in range(THREADS)])
    lock = threading.Lock()

    def call(uow):  # noqa: ANN001, ANN202
        with lock:
            sha = next(shas)
        return submit_revision(uow, repo="https://github.com/org/flash.git", sha=sha)

    revision_ids = _race(store, call)
    with session_factory() as s:
        assert s.scalars(select(Repository.name)).all() == ["org/flash"]
        assert {s.get(Revision, i).repository_id for i in revision_ids} == {s.scalar(select(Repository.id))}
        assert s.scalar(select(func.count()).select_from(Revision)) == THREADS


def test_identical_submissions_racing_store_one_revision(store, session_factory):
    """Every thread submits the same (repository, sha, base, kernels): one revision; all but one
    answer that it was reused."""
    def call(uow):  # noqa: ANN001, ANN202
        done = submit(uow, repo="https://github.com/org/flash.git", sha=SHA_B, base_sha=SHA_A,
                      kernels=["fwd", "bwd"])
        return done.revision_id, done.reused

    answers = _race(store, call)
    assert len({revision_id for revision_id, _ in answers}) == 1
    assert sorted(reused for _, reused in answers) == [False] + [True] * (THREADS - 1)
    with session_factory() as s:
        assert s.scalar(select(func.count()).select_from(Revision)) == 1
        assert s.scalar(select(func.count()).select_from(Repository)) == 1
