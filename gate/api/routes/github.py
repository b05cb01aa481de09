"""`POST /api/v1/webhooks/github`: GitHub's push and pull_request events in, revisions queued.

Answers (GitHub shows them under the webhook's "Recent Deliveries"):
    503  GATE_GITHUB_WEBHOOK_SECRET is not set: the server cannot check anything, so it takes
         nothing (a configuration fault of the server, not of the sender; redeliver once it is set);
         or too many unsigned bodies are being read, or the planner's queue is full (Retry-After)
    401  X-Hub-Signature-256 missing (refused before the body is read, `gate.api.auth`) or wrong
         (HMAC-SHA256 of the raw body, constant-time compare)
    413  a body over GATE_MAX_BODY_BYTES, refused before it is read (`gate.api.body_limit`)
    400  no X-GitHub-Event / X-GitHub-Delivery (or one longer than its column), a body that is not
         JSON (or nested too deeply to read), or an event not handled
    422  a push or pull_request payload without the fields the gate needs (named), or a clone URL
         the fetch policy refuses (named: scheme, address, local path)
    200  ping -> pong; a duplicate delivery, or a replay (new delivery id) of a commit and event
         already judged; an event that asks for nothing (tag, other branch, ...); a fork's pull
         request awaiting a maintainer's approval (a pending `gate` status says so)
    202  a revision was stored; it is planned (merge base, gate.toml, jobs) after the reply

Fork pull requests are not built until a maintainer approves (`ForkApproval`; the head of one
approved by comment is read from the GitHub API). `GATE_GITHUB_FORK_APPROVAL=false` builds forks at
once (a private installation with trusted forks).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx

from fastapi import APIRouter, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from gate.api.context import GateContext, PlannerFull
from gate.api.deps import GateDep
from gate.api.github_events import (
    HANDLED_EVENTS,
    AwaitingApproval,
    ForkApproval,
    GateRequest,
    Ignored,
    IssueCommentIn,
    PullRequestIn,
    PushIn,
    RepositoryIn,
    approving_comment,
    from_pull_request,
    from_push,
)
from gate.api.schemas import ErrorOut, errors
from gate.domain import routes
from gate.notify import github_status
from gate.notify.app_auth import github_headers
from gate.notify.outbound import verify
from gate.services.merge_base import find_merge_base
from gate.services.submissions import PLANNER_FULL, canonical_repo, fail_unplanned, submit_revision
from gate.sources.policy import FetchRefused
from gate.storage.limits import DELIVERY_ID_CHARS

log = logging.getLogger(__name__)
router = APIRouter(tags=["webhooks"])


class WebhookOut(BaseModel):
    status: str                       # pong | queued | duplicate | ignored | awaiting_approval
    detail: str = ""
    revision_id: int | None = None


def _refuse(status_code: int, detail: str, delivery: str | None) -> HTTPException:
    log.warning("github webhook %s refused (%s): %s", delivery or "-", status_code, detail)
    return HTTPException(status_code=status_code, detail=detail)


@router.post(routes.GITHUB_WEBHOOK, response_model=WebhookOut, status_code=202,
             responses={200: {"model": WebhookOut, "description": "pong, a duplicate, or nothing to gate"},
                        **errors(400, 401, 413, 503),
                        422: {"model": ErrorOut, "description": "a payload without the fields the gate needs"}})
async def github_webhook(
    request: Request, gate: GateDep,
    x_github_event: str | None = Header(None), x_github_delivery: str | None = Header(None),
    x_hub_signature_256: str | None = Header(None),
) -> WebhookOut | JSONResponse:
    """Receive a GitHub webhook (push, pull_request, ping), signed with X-Hub-Signature-256."""
    payload = await _signed_payload(request, gate, x_github_event, x_github_delivery, x_hub_signature_256)
    if x_github_event == "ping":
        return JSONResponse(WebhookOut(status="pong", detail="webhook reached the gate").model_dump())
    settings = gate.settings
    approval = ForkApproval(required=settings.github_fork_approval, label=settings.github_approval_label,
                            comment=settings.github_approval_comment)
    wanted = await _wanted(gate, x_github_event, payload, approval, x_github_delivery)
    if isinstance(wanted, AwaitingApproval):
        log.info("github webhook %s: %s", x_github_delivery, wanted.reason)
        await run_in_threadpool(_awaiting_approval_status, gate, wanted, approval)
        return JSONResponse(WebhookOut(status="awaiting_approval", detail=wanted.reason).model_dump())
    if isinstance(wanted, Ignored):
        log.info("github webhook %s ignored: %s", x_github_delivery, wanted.reason)
        return JSONResponse(WebhookOut(status="ignored", detail=wanted.reason).model_dump())
    return await _queue(gate, wanted, x_github_delivery, x_github_event)


async def _signed_payload(request: Request, gate: GateContext, event: str | None, delivery: str | None,
                          signature: str | None) -> Any:
    """The body as JSON, once the secret, the signature and the headers check out (else the refusal)."""
    secret = gate.settings.github_webhook_secret
    if not secret:
        raise _refuse(503, "GATE_GITHUB_WEBHOOK_SECRET is not set: webhooks are refused until it is", delivery)
    raw = await request.body()
    if not verify(secret, raw, signature):
        raise _refuse(401, "X-Hub-Signature-256 is missing or does not match the body", delivery)
    if not event or not delivery:
        raise _refuse(400, "X-GitHub-Event and X-GitHub-Delivery headers are required", delivery)
    if len(delivery) > DELIVERY_ID_CHARS or not delivery.isprintable():
        raise _refuse(400, f"X-GitHub-Delivery must be at most {DELIVERY_ID_CHARS} printable characters "
                           f"(GitHub sends a GUID), got {len(delivery)}", None)
    if event not in HANDLED_EVENTS:
        raise _refuse(400, f"event {event!r} is not handled: subscribe to push and pull_request only", delivery)
    try:
        return json.loads(raw)
    except ValueError as exc:       # a lone surrogate escape is valid JSON; it is refused below
        raise _refuse(400, f"the body is not JSON: {exc}", delivery) from exc
    except RecursionError as exc:   # json recurses per level of nesting
        raise _refuse(400, "the body is JSON nested too deeply to read", delivery) from exc


async def _wanted(gate: GateContext, event: str, payload: Any, approval: ForkApproval,
                  delivery: str) -> GateRequest | Ignored | AwaitingApproval:
    """What the event asks to gate; a payload without the fields the gate needs is refused (422)."""
    try:
        if event == "push":
            return from_push(PushIn.model_validate(payload), gate.settings.github_branches)
        if event == "pull_request":
            return from_pull_request(PullRequestIn.model_validate(payload), approval)
        comment = IssueCommentIn.model_validate(payload)
        number = approving_comment(comment, approval)
        return number if isinstance(number, Ignored) else \
            await run_in_threadpool(_pull_request, gate, comment.repository, number)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise _refuse(422, f"{event} payload: {fields}", delivery) from exc


async def _queue(gate: GateContext, wanted: GateRequest, delivery: str, event: str) -> WebhookOut | JSONResponse:
    """Store the delivery and the revision, and plan it after the reply (its merge base first)."""
    try:
        gate.policy.check_static(wanted.clone_url)
    except FetchRefused as exc:
        raise _refuse(422, f"repository.clone_url: {exc}", delivery) from exc
    fetch = await run_in_threadpool(gate.fetch_of, wanted.clone_url)
    if not gate.planner.has_room(fetch):
        raise _busy(delivery)
    revision_id, fresh = await run_in_threadpool(_record, gate, wanted, delivery, event)
    if not fresh:
        detail = f"delivery {delivery} was received before, or this commit and event were judged"
        return JSONResponse(WebhookOut(status="duplicate", detail=detail, revision_id=revision_id).model_dump())
    if gate.plan_later(revision_id, fetch, before=lambda: _merge_base(gate, revision_id, wanted)) is None:
        await run_in_threadpool(fail_unplanned, gate.store, revision_id, PLANNER_FULL)
        raise _busy(delivery)
    detail = f"{wanted.full_name}@{wanted.sha[:12]} queued"
    if wanted.base_sha:
        detail += f"; baseline: merge base with {wanted.base_sha[:12]} (the base tip if git cannot tell)"
    return WebhookOut(status="queued", detail=detail, revision_id=revision_id)


def _pull_request(gate: GateContext, repo: RepositoryIn, number: int) -> GateRequest | Ignored:
    """The head and base of pull request `number` from the GitHub API (an approving comment does not carry them)."""
    token = gate.settings.github_token
    if not token:
        return Ignored("approval by comment needs GATE_GITHUB_TOKEN to read the pull request's head")
    url = f"{gate.settings.github_api_url.rstrip('/')}/repos/{repo.full_name}/pulls/{number}"
    try:
        reply = httpx.get(url, headers=github_headers(token), timeout=15)
        reply.raise_for_status()
        pr = reply.json()
        head, base = pr["head"], pr["base"]
        return GateRequest(repo.full_name, repo.clone_url, repo.default_branch, head["sha"], head["ref"],
                           base["sha"], pull_request=number)
    except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
        return Ignored(f"could not read pull request #{number} from GitHub: {type(exc).__name__}")


def _awaiting_approval_status(gate: GateContext, waiting: AwaitingApproval, approval: ForkApproval) -> None:
    """A pending `gate` commit status on the fork's head that says what would start the build."""
    settings = gate.settings
    if not settings.github_token:
        return
    description = f"fork PR: not built until a maintainer approves ({approval.label!r} label or " \
                  f"{approval.comment!r} comment)"
    body = github_status.status_body("pending", description, "gate", settings.public_url)
    with gate.store.unit() as uow:
        uow.outbox.store([github_status.new_status(settings.github_api_url, waiting.request.full_name,
                                                   waiting.request.sha, body, None)])


def _busy(delivery: str | None) -> HTTPException:
    log.warning("github webhook %s refused (503): %s", delivery or "-", PLANNER_FULL)
    return PlannerFull()


def _record(gate: GateContext, wanted: GateRequest, delivery_id: str, event: str) -> tuple[int | None, bool]:
    """Store the delivery and the revision in one transaction. (revision id, False) for a redelivery,
    or for a replay under a new delivery id of a commit and event already judged."""
    with gate.store.unit() as uow:
        if not uow.webhooks.first_delivery(delivery_id, event):
            return uow.webhooks.delivered_revision(delivery_id), False
        url, _ = canonical_repo(wanted.clone_url)
        repository_id = uow.repositories.claim(url, wanted.full_name, wanted.default_branch)   # flushed
        judged = uow.webhooks.judged_revision(repository_id, wanted.sha, wanted.pull_request)
        if judged is not None:
            uow.webhooks.link_revision(delivery_id, judged)
            return judged, False
        revision_id = submit_revision(uow, repo=wanted.clone_url, sha=wanted.sha, branch=wanted.branch,
                                      base_sha=wanted.base_sha, source="webhook",
                                      pull_request=wanted.pull_request)   # commits delivery + revision
        uow.webhooks.link_revision(delivery_id, revision_id)
        return revision_id, True


def _merge_base(gate: GateContext, revision_id: int, wanted: GateRequest) -> None:
    """Before planning, on the planner's workers: for a PR, replace the base tip with the merge base."""
    if wanted.base_sha:
        found = find_merge_base(wanted.clone_url, wanted.base_sha, wanted.sha,
                                getattr(gate.sources, "mirror", None))
        if found and found != wanted.base_sha:
            with gate.store.unit() as uow:
                uow.webhooks.set_merge_base(revision_id, found)
