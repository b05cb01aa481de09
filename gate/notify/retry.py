"""One HTTP call with in-call retries (tenacity), and what counts as a transient failure.

Transient: network errors, 5xx, 429, and GitHub's rate limits (403/429 with `Retry-After`, or
`x-ratelimit-remaining: 0`). GitHub's guidance for secondary rate limits is to wait `Retry-After`
seconds when the header is there, else at least a minute ("Rate limits for the REST API",
docs.github.com). A wait longer than `max_in_call_wait_s` is not slept here: the call gives up
with `retry_after_s` set, and the sender stores the row for a later sweep instead of blocking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception

from gate.errors import NotifyError

SECONDARY_LIMIT_WAIT_S = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3                  # per call, the first one included
    backoff_s: float = 1.0             # doubled after each transient failure
    max_in_call_wait_s: float = 10.0   # longer waits are deferred to the sweep
    timeout_s: float = 10.0            # per request


class DeliveryError(NotifyError):
    """The receiver did not take the message. `transient` failures are worth another try later."""

    def __init__(self, message: str, *, transient: bool, status: int | None = None,
                 retry_after_s: float | None = None):
        super().__init__(message)
        self.transient = transient
        self.status = status
        self.retry_after_s = retry_after_s


def rate_limit_wait_s(response: httpx.Response, now_s: float | None = None) -> float | None:
    """Seconds GitHub asks us to wait, or None when the response is not a rate limit."""
    if response.status_code not in (403, 429):
        return None
    retry_after = response.headers.get("retry-after")
    if retry_after is not None:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            return SECONDARY_LIMIT_WAIT_S
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = float(response.headers.get("x-ratelimit-reset", "0") or 0)
        return max(0.0, reset - (time.time() if now_s is None else now_s))
    if response.status_code == 429 or "rate limit" in response.text.lower():
        return SECONDARY_LIMIT_WAIT_S
    return None


def classify(response: httpx.Response) -> DeliveryError | None:
    """None for a 2xx; otherwise the error to raise, transient or not."""
    status = response.status_code
    if status < 300:
        return None
    what = f"{response.request.method} {response.request.url} -> {status}: {response.text[:300]}"
    wait_s = rate_limit_wait_s(response)
    if wait_s is not None:
        return DeliveryError(f"rate limited: {what}", transient=True, status=status, retry_after_s=wait_s)
    return DeliveryError(what, transient=status >= 500, status=status)


def call(client: httpx.Client, method: str, url: str, *, policy: RetryPolicy,
         headers: dict[str, str] | None = None, json: Any = None,
         content: bytes | None = None) -> httpx.Response:
    """Send one request, retrying transient failures. Raises `DeliveryError` when it gives up."""

    def once() -> httpx.Response:
        try:
            response = client.request(method, url, headers=headers, json=json, content=content,
                                      timeout=policy.timeout_s)
        except httpx.TransportError as exc:
            raise DeliveryError(f"{method} {url}: {type(exc).__name__}: {exc}", transient=True) from exc
        error = classify(response)
        if error is not None:
            raise error
        return response

    def give_up(state: RetryCallState) -> bool:
        error = _error(state)
        too_long = bool(error and error.retry_after_s is not None
                        and error.retry_after_s > policy.max_in_call_wait_s)
        return too_long or state.attempt_number >= policy.attempts

    def wait(state: RetryCallState) -> float:
        error = _error(state)
        if error is not None and error.retry_after_s is not None:
            return error.retry_after_s
        return policy.backoff_s * 2 ** (state.attempt_number - 1)

    retrying = Retrying(
        stop=give_up,
        wait=wait,
        retry=retry_if_exception(lambda exc: isinstance(exc, DeliveryError) and exc.transient),
        reraise=True,
    )
    return retrying(once)


def _error(state: RetryCallState) -> DeliveryError | None:
    exc = state.outcome.exception() if state.outcome else None
    return exc if isinstance(exc, DeliveryError) else None
