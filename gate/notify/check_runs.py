"""Check Runs (GitHub App only): created `queued` with the job, completed with the verdict.

    POST  /repos/{owner}/{repo}/check-runs          name, head_sha, status, details_url
    PATCH /repos/{owner}/{repo}/check-runs/{id}     status=completed, conclusion, output

The id GitHub returns for the create is kept in that row's payload (`check_run_id`), and the
completion patches it. When the create could never be delivered, the completion creates the
check run already completed, so a verdict is never lost to a failed `queued` post.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from sqlalchemy import select
from sqlalchemy.orm import Session

from gate.notify.app_auth import AppAuth, github_headers
from gate.notify.retry import DeliveryError, RetryPolicy, call
from gate.storage.models import Notification

TARGET = "check_run"
CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped",
               "stale", "timed_out")      # GitHub's documented enum


def new_check_run(api_url: str, repo: str, sha: str, name: str, details_url: str,
                  job_id: int | None) -> Notification:
    body = {"name": name, "head_sha": sha, "status": "queued", "details_url": details_url}
    return Notification(job_id=job_id, target=TARGET, url=_runs_url(api_url, repo),
                        payload={"repo": repo, "action": "create", "body": body})


def complete_check_run(api_url: str, repo: str, sha: str, name: str, details_url: str,
                       conclusion: str, title: str, summary: str,
                       job_id: int | None) -> Notification:
    if conclusion not in CONCLUSIONS:
        raise ValueError(f"check run conclusion {conclusion!r} is not one of {CONCLUSIONS}")
    body = {
        "name": name,
        "head_sha": sha,
        "status": "completed",
        "conclusion": conclusion,
        "details_url": details_url,
        "output": {"title": title, "summary": summary},
    }
    return Notification(job_id=job_id, target=TARGET, url=_runs_url(api_url, repo),
                        payload={"repo": repo, "action": "complete", "body": body})


def send_check_run(session: Session, client: httpx.Client, notification: Notification,
                   auth: AppAuth, policy: RetryPolicy) -> None:
    payload = notification.payload
    headers = github_headers(auth.token_for(payload["repo"]))
    body = dict(payload["body"])
    if payload["action"] == "create":
        response = call(client, "POST", notification.url, headers=headers, json=body, policy=policy)
        notification.payload = {**payload, "check_run_id": int(response.json()["id"])}
        return
    body["completed_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    created = _created_run(session, notification)
    if isinstance(created, int):
        body.pop("head_sha")       # not part of the PATCH schema
        call(client, "PATCH", f"{notification.url}/{created}", headers=headers, json=body,
             policy=policy)
    elif created == "waiting":
        raise DeliveryError("the check run's create is not delivered yet", transient=True)
    else:
        call(client, "POST", notification.url, headers=headers, json=body, policy=policy)


def _created_run(session: Session, completion: Notification) -> int | str:
    """The id of this job's created check run, "waiting" while its create is pending, else "none"."""
    if completion.job_id is None:
        return "none"
    creates = session.scalars(
        select(Notification).where(
            Notification.job_id == completion.job_id,
            Notification.target == TARGET,
            Notification.id != completion.id,
        ).order_by(Notification.id.desc())
    )
    for row in creates:
        if row.payload.get("action") != "create":
            continue
        if row.state == "sent" and "check_run_id" in row.payload:
            return int(row.payload["check_run_id"])
        if row.state == "pending":
            return "waiting"
    return "none"


def _runs_url(api_url: str, repo: str) -> str:
    return f"{api_url.rstrip('/')}/repos/{repo}/check-runs"
