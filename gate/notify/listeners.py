"""Listeners that turn job events into stored `Notification` rows (no network I/O here).

    GitHubStatusListener   commit statuses `gate/<kernel>`: `pending` when queued, then the verdict
    CheckRunListener       Check Runs `gate/<kernel>` (GitHub App): queued, then completed
    WebhookListener        the verdict JSON to every outbound webhook URL

GitHub listeners act only on revisions of GitHub repositories: those whose `Repository.name` is
`owner/name`, as the webhook stores it from `repository.full_name`. Several GPU kinds for one kernel
share the context `gate/<kernel>`; the last verdict stored is the one GitHub shows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from gate.config import Settings
from gate.domain.codec import from_json, to_json
from gate.domain.verdict import RuleRow, Verdict, VerdictReport
from gate.notify import Listener, check_runs, github_status, messages, outbound, register
from gate.notify.sweeper import wake_after_commit
from gate.storage.models import Job

GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
QUEUED_DESCRIPTION = "queued: build, correctness, timing and profile on a GPU"


@dataclass(frozen=True)
class JobFacts:
    """What every message about a job needs, read once from its rows."""

    job_id: int
    kernel: str
    repo: str
    sha: str
    target_url: str


def job_facts(job: Job, public_url: str) -> JobFacts:
    revision = job.revision
    return JobFacts(
        job_id=job.id,
        kernel=job.kernel,
        repo=revision.repository.name,
        sha=revision.sha,
        target_url=f"{public_url.rstrip('/')}/revisions/{revision.id}",
    )


def job_report(job: Job) -> VerdictReport:
    """The stored verdict; a job that ended without one reads as `error`, never as passing."""
    record = job.verdict
    if record is None:
        return VerdictReport(Verdict.ERROR, job.error or "the job ended without a verdict")
    rules = from_json(list[RuleRow], record.rules or [], path="rules")
    return VerdictReport(Verdict(record.verdict), record.reason, rules)


def _github_jobs(jobs: Sequence[Job], public_url: str) -> list[JobFacts]:
    """One job per kernel (the context is per kernel), GitHub repositories only."""
    by_kernel: dict[str, JobFacts] = {}
    for job in jobs:
        facts = job_facts(job, public_url)
        if GITHUB_REPO.match(facts.repo):
            by_kernel.setdefault(facts.kernel, facts)
    return list(by_kernel.values())


class GitHubStatusListener:
    def __init__(self, api_url: str, public_url: str):
        self.api_url = api_url
        self.public_url = public_url

    def jobs_queued(self, session: Session, jobs: Sequence[Job]) -> None:
        for f in _github_jobs(jobs, self.public_url):
            body = github_status.status_body("pending", QUEUED_DESCRIPTION, messages.context(f.kernel),
                                             f.target_url)
            session.add(github_status.new_status(self.api_url, f.repo, f.sha, body, f.job_id))
        wake_after_commit(session)

    def verdict(self, session: Session, job: Job) -> None:
        for f in _github_jobs([job], self.public_url):
            report = job_report(job)
            body = github_status.status_body(messages.commit_state(report.verdict),
                                             messages.describe(report),
                                             messages.context(f.kernel), f.target_url)
            session.add(github_status.new_status(self.api_url, f.repo, f.sha, body, f.job_id))
        wake_after_commit(session)


class CheckRunListener:
    def __init__(self, api_url: str, public_url: str):
        self.api_url = api_url
        self.public_url = public_url

    def jobs_queued(self, session: Session, jobs: Sequence[Job]) -> None:
        for f in _github_jobs(jobs, self.public_url):
            session.add(check_runs.new_check_run(self.api_url, f.repo, f.sha, messages.context(f.kernel),
                                                 f.target_url, f.job_id))
        wake_after_commit(session)

    def verdict(self, session: Session, job: Job) -> None:
        for f in _github_jobs([job], self.public_url):
            report = job_report(job)
            session.add(check_runs.complete_check_run(
                self.api_url, f.repo, f.sha, messages.context(f.kernel), f.target_url,
                conclusion=messages.check_conclusion(report.verdict),
                title=messages.check_title(report),
                summary=messages.check_summary(f.kernel, report, f.target_url),
                job_id=f.job_id,
            ))
        wake_after_commit(session)


class WebhookListener:
    def __init__(self, urls: Sequence[str], public_url: str):
        self.urls = list(urls)
        self.public_url = public_url

    def jobs_queued(self, session: Session, jobs: Sequence[Job]) -> None:
        """Outbound webhooks carry verdicts only."""

    def verdict(self, session: Session, job: Job) -> None:
        body = verdict_event(job, self.public_url)
        for url in self.urls:
            session.add(outbound.new_webhook(url, body, job.id))
        wake_after_commit(session)


def verdict_event(job: Job, public_url: str) -> dict[str, Any]:
    """The outbound webhook body: which revision and kernel, the verdict and its rule table."""
    revision = job.revision
    report = job_report(job)
    return {
        "event": outbound.EVENT,
        "revision": {
            "id": revision.id,
            "repo": revision.repository.name,
            "sha": revision.sha,
            "branch": revision.branch,
            "base_sha": revision.base_sha,
            "pull_request": revision.pull_request,
            "url": job_facts(job, public_url).target_url,
        },
        "job": {"id": job.id, "kernel": job.kernel, "gpu_kind": job.gpu_kind},
        "verdict": report.verdict.value,
        "reason": report.reason,
        "rules": to_json(report.rules),
        "fingerprint": job.verdict.fingerprint if job.verdict else None,
    }


def listeners_for(settings: Settings) -> list[Listener]:
    """The listeners the settings ask for: a token -> statuses, an App -> Check Runs, URLs -> webhooks."""
    chosen: list[Listener] = []
    if settings.github_token:
        chosen.append(GitHubStatusListener(settings.github_api_url, settings.public_url))
    if settings.github_app_id and settings.github_app_private_key:
        chosen.append(CheckRunListener(settings.github_api_url, settings.public_url))
    if settings.outbound_webhooks:
        chosen.append(WebhookListener(settings.outbound_webhooks, settings.public_url))
    return chosen


def configure(settings: Settings) -> list[Listener]:
    """Register (once, replacing earlier ones) the listeners the settings ask for."""
    from gate.notify import clear

    clear()
    chosen = listeners_for(settings)
    for listener in chosen:
        register(listener)
    return chosen
