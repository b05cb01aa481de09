"""Commit statuses: `POST /repos/{owner}/{repo}/statuses/{sha}` with a token.

Branch protection can require the context `gate/<kernel>`; GitHub keeps the latest status per
context, so `pending` and the final state are two posts to the same context.
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from gate.domain.notices import Delivery, StoredDelivery
from gate.notify.app_auth import github_headers
from gate.notify.messages import DESCRIPTION_MAX_CHARS
from gate.notify.retry import RetryPolicy, call

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
               job_id: int | None) -> Delivery:
    """A delivery to store; nothing is sent until the sender picks it up."""
    return Delivery(
        job_id=job_id,
        target=TARGET,
        url=f"{api_url.rstrip('/')}/repos/{repo}/statuses/{sha}",
        payload={"repo": repo, "body": body},
    )


def send_status(client: httpx.Client, notification: StoredDelivery, token: str,
                policy: RetryPolicy) -> None:
    call(client, "POST", notification.url, headers=github_headers(token),
         json=notification.payload["body"], policy=policy)


def superseded(row: StoredDelivery, newer_sent: Sequence[StoredDelivery]) -> bool:
    """A status whose newer sibling (same sha and context) went out must not be sent: sent late it
    would overwrite it (e.g. a deferred `pending` over the final `success`). Rows are swept oldest
    first, so in the ordinary case `pending` goes out before the final state."""
    context = row.payload["body"]["context"]
    return any(n.payload["body"]["context"] == context for n in newer_sent)
