"""Commit statuses: `POST /repos/{owner}/{repo}/statuses/{sha}` with a token.

Branch protection can require the context `gate/<kernel>`; GitHub keeps the latest status per
context, so `pending` and the final state are two posts to the same context.
"""

from __future__ import annotations

import httpx

from gate.notify.app_auth import github_headers
from gate.notify.messages import DESCRIPTION_MAX_CHARS
from gate.notify.retry import RetryPolicy, call
from gate.storage.models import Notification

TARGET = "github_status"
STATES = ("error", "failure", "pending", "success")     # GitHub's documented enum


def status_body(state: str, description: str, context: str, target_url: str) -> dict[str, str]:
    """The request body GitHub documents: state, target_url, description (<= 140), context."""
    if state not in STATES:
        raise ValueError(f"commit status state {state!r} is not one of {STATES}")
    return {
        "state": state,
        "target_url": target_url,
        "description": description[:DESCRIPTION_MAX_CHARS],
        "context": context,
    }


def new_status(api_url: str, repo: str, sha: str, body: dict[str, str],
               job_id: int | None) -> Notification:
    """A pending row; nothing is sent until the sender picks it up."""
    return Notification(
        job_id=job_id,
        target=TARGET,
        url=f"{api_url.rstrip('/')}/repos/{repo}/statuses/{sha}",
        payload={"repo": repo, "body": body},
    )


def send_status(client: httpx.Client, notification: Notification, token: str,
                policy: RetryPolicy) -> None:
    call(client, "POST", notification.url, headers=github_headers(token),
         json=notification.payload["body"], policy=policy)
