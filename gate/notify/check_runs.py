"""Check Runs (GitHub App only): created `queued` with the job, completed with the verdict.

    POST  /repos/{owner}/{repo}/check-runs          name, head_sha, status, details_url
    PATCH /repos/{owner}/{repo}/check-runs/{id}     status=completed, conclusion, output

The id GitHub returns for the create is kept in that row's payload (`check_run_id`), and the
completion patches it. When the create could never be delivered, the completion creates the
check run already completed, so a verdict is never lost to a failed `queued` post.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from gate.domain.notices import Delivery, DeliveryState, StoredDelivery
from gate.notify.app_auth import AppAuth, github_headers
from gate.notify.retry import DeliveryError, RetryPolicy, call

TARGET = "check_run"
CONCLUSIONS = ("action_required", "cancelled", "failure", "neutral", "success", "skipped",
               "stale", "timed_out")      # GitHub's documented enum


def new_check_run(api_url: str, repo: str, sha: str, name: str, details_url: str,
                  job_id: int | None) -> Delivery:
    body = {"name": name, "head_sha": sha, "status": "queued", "details_url": details_url}
    return _delivery(api_url, repo, "create", body, job_id)


def complete_check_run(api_url: str, repo: str, sha: str, name: str, details_url: str,
                       conclusion: str, title: str, summary: str,
                       job_id: int | None) -> Delivery:
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
    return _delivery(api_url, repo, "complete", body, job_id)


def _delivery(api_url: str, repo: str, action: str, body: dict[str, Any], job_id: int | None) -> Delivery:
    return Delivery(job_id=job_id, target=TARGET, url=f"{api_url.rstrip('/')}/repos/{repo}/check-runs",
                    payload={"repo": repo, "action": action, "body": body})


def send_check_run(client: httpx.Client, notification: StoredDelivery, auth: AppAuth, policy: RetryPolicy,
                   siblings: Callable[[], Sequence[StoredDelivery]]) -> dict[str, Any] | None:
    """Send one row; for a create, the row's new payload (with GitHub's `check_run_id`).
    `siblings`: the job's other check-run rows, newest first (read only for a completion)."""
    payload = notification.payload
    headers = github_headers(auth.token_for(payload["repo"]))
    body = dict(payload["body"])
    if payload["action"] == "create":
        response = call(client, "POST", notification.url, headers=headers, json=body, policy=policy)
        return {**payload, "check_run_id": int(response.json()["id"])}
    body["completed_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    created = created_run(notification, siblings())
    if isinstance(created, int):
        body.pop("head_sha")       # not part of the PATCH schema
        call(client, "PATCH", f"{notification.url}/{created}", headers=headers, json=body,
             policy=policy)
    elif created == "waiting":
        raise DeliveryError("the check run's create is not delivered yet", transient=True)
    else:
        call(client, "POST", notification.url, headers=headers, json=body, policy=policy)
    return None


def created_run(completion: StoredDelivery, siblings: Sequence[StoredDelivery]) -> int | str:
    """The id of this job's created check run, "waiting" while its create is pending, else "none"."""
    if completion.job_id is None:
        return "none"
    for row in siblings:
        if row.payload.get("action") != "create":
            continue
        if row.state is DeliveryState.SENT and "check_run_id" in row.payload:
            return int(row.payload["check_run_id"])
        if row.state is DeliveryState.PENDING:
            return "waiting"
    return "none"
