"""Listeners that turn job events into `Delivery` values to store (no I/O here): commit statuses
and Check Runs `gate/<kernel>`, and the verdict JSON to every outbound webhook URL.

GitHub listeners act only on revisions of GitHub repositories: those whose `Repository.name` is
`owner/name`, as the webhook stores it from `repository.full_name`. Several GPU kinds for one kernel
share the context `gate/<kernel>`; the last verdict stored is the one GitHub shows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gate.config import Settings
from gate.domain import routes
from gate.domain.codec import to_json
from gate.domain.notices import Delivery, JobFacts
from gate.domain.verdict import VerdictReport
from gate.notify import Listener, Notifier, check_runs, github_status, messages, outbound

GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
QUEUED_DESCRIPTION = "queued: build, correctness, timing and profile on a GPU"


def target_url(public_url: str, job: JobFacts) -> str:
    """The revision's dashboard page: every message links there."""
    return public_url.rstrip("/") + routes.link(routes.REVISION_PAGE, ref=job.revision_id)


def _github_jobs(jobs: Sequence[JobFacts]) -> list[JobFacts]:
    """One job per kernel (the context is per kernel), GitHub repositories only."""
    by_kernel: dict[str, JobFacts] = {}
    for job in jobs:
        if GITHUB_REPO.match(job.repo):
            by_kernel.setdefault(job.kernel, job)
    return list(by_kernel.values())


class GitHubStatusListener:
    def __init__(self, api_url: str, public_url: str):
        self.api_url = api_url
        self.public_url = public_url

    def jobs_queued(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        return [self._status(f, "pending", QUEUED_DESCRIPTION) for f in _github_jobs(jobs)]

    def verdict(self, job: JobFacts, report: VerdictReport) -> list[Delivery]:
        return [self._status(f, messages.commit_state(report.verdict), messages.describe(report))
                for f in _github_jobs([job])]

    def cancelled(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        return [self._status(f, messages.CANCELLED_STATE, messages.CANCELLED_DESCRIPTION)
                for f in _github_jobs(jobs)]

    def _status(self, f: JobFacts, state: str, description: str) -> Delivery:
        body = github_status.status_body(state, description, messages.context(f.kernel),
                                         target_url(self.public_url, f))
        return github_status.new_status(self.api_url, f.repo, f.sha, body, f.job_id)


class CheckRunListener:
    def __init__(self, api_url: str, public_url: str):
        self.api_url = api_url
        self.public_url = public_url

    def jobs_queued(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        return [check_runs.new_check_run(self.api_url, f.repo, f.sha, messages.context(f.kernel),
                                         target_url(self.public_url, f), f.job_id)
                for f in _github_jobs(jobs)]

    def verdict(self, job: JobFacts, report: VerdictReport) -> list[Delivery]:
        return [self._completed(f, messages.check_conclusion(report.verdict), messages.check_title(report),
                                messages.check_summary(f.kernel, report, target_url(self.public_url, f)))
                for f in _github_jobs([job])]

    def cancelled(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        return [self._completed(f, messages.CANCELLED_CONCLUSION, messages.CANCELLED_DESCRIPTION,
                                f"### {messages.context(f.kernel)}: cancelled\n\n{messages.CANCELLED_DESCRIPTION}\n\n"
                                f"[The revision on the dashboard]({target_url(self.public_url, f)})")
                for f in _github_jobs(jobs)]

    def _completed(self, f: JobFacts, conclusion: str, title: str, summary: str) -> Delivery:
        return check_runs.complete_check_run(self.api_url, f.repo, f.sha, messages.context(f.kernel),
                                             target_url(self.public_url, f), conclusion, title, summary, f.job_id)


class WebhookListener:
    def __init__(self, urls: Sequence[str], public_url: str):
        self.urls = list(urls)
        self.public_url = public_url

    def jobs_queued(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        """Outbound webhooks carry verdicts only."""
        return []

    def verdict(self, job: JobFacts, report: VerdictReport) -> list[Delivery]:
        body = verdict_event(job, report, self.public_url)
        return [outbound.new_webhook(url, body, job.job_id) for url in self.urls]

    def cancelled(self, jobs: Sequence[JobFacts]) -> list[Delivery]:
        """Outbound webhooks carry verdicts only; a cancelled job has none."""
        return []


def verdict_event(job: JobFacts, report: VerdictReport, public_url: str) -> dict[str, Any]:
    """The outbound webhook body: which revision and kernel, the verdict and its rule table."""
    return {
        "event": outbound.EVENT,
        "revision": {
            "id": job.revision_id,
            "repo": job.repo,
            "sha": job.sha,
            "branch": job.branch,
            "base_sha": job.base_sha,
            "pull_request": job.pull_request,
            "url": target_url(public_url, job),
        },
        "job": {"id": job.job_id, "kernel": job.kernel, "gpu_kind": job.gpu_kind},
        "verdict": report.verdict.value,
        "reason": report.reason,
        "rules": to_json(report.rules),
        "fingerprint": job.fingerprint,
    }


def notifier_for(settings: Settings) -> Notifier:
    """The notifier of a service with `settings`: a token -> statuses, an App -> Check Runs, URLs -> webhooks."""
    chosen: list[Listener] = []
    if settings.github_token:
        chosen.append(GitHubStatusListener(settings.github_api_url, settings.public_url))
    if settings.github_app_id and settings.github_app_private_key:
        chosen.append(CheckRunListener(settings.github_api_url, settings.public_url))
    if settings.outbound_webhooks:
        chosen.append(WebhookListener(settings.outbound_webhooks, settings.public_url))
    return Notifier(chosen)
