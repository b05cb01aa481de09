"""Rows to notify about and a running GitHub stand-in. `session_factory` (SQLite and PostgreSQL,
migrated) comes from tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from gate.domain.codec import to_json
from gate.domain.verdict import VerdictReport
from gate.notify import Listener
from gate.storage import outbox
from gate.storage.models import Job, Repository, Revision, VerdictRecord
from gate.storage.queries import job_facts, stored_report
from tests.fakes.github_server import FakeGitHub, make_app_key

SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
PUBLIC_URL = "https://gate.example.com"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(token="test-token") as fake:
        yield fake


@pytest.fixture(scope="session")
def app_key() -> tuple[str, str]:
    return make_app_key()


def add_job(session: Session, *, repo: str = "octo/flashcore", kernel: str = "flashcore_wmma",
            sha: str = SHA) -> Job:
    repository = session.query(Repository).filter_by(name=repo).one_or_none()
    if repository is None:
        repository = Repository(name=repo, url=f"https://github.com/{repo}.git")
    revision = Revision(repository=repository, sha=sha, branch="feature", source="webhook", pull_request=7)
    job = Job(revision=revision, kernel=kernel)
    session.add(job)
    session.flush()
    return job


def finish(session: Session, job: Job, report: VerdictReport) -> None:
    job.verdict = VerdictRecord(job_id=job.id, revision_id=job.revision_id, kernel=job.kernel,
                                gpu_kind="NVIDIA H100", verdict=report.verdict.value, reason=report.reason,
                                rules=to_json(report.rules))
    session.flush()


def store_queued(session: Session, listener: Listener, jobs: list[Job]) -> None:
    """What the submission service does: the listener's deliveries for queued jobs, into the outbox."""
    outbox.add(session, listener.jobs_queued([job_facts(job) for job in jobs]))


def store_verdict(session: Session, listener: Listener, job: Job) -> None:
    """What the executor does with a stored verdict: the listener's deliveries, into the outbox."""
    fingerprint = job.verdict.fingerprint if job.verdict else None
    outbox.add(session, listener.verdict(job_facts(job, fingerprint), stored_report(job)))
