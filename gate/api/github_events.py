"""GitHub webhook payloads -> what to gate. Pure: validation and the decision, no I/O.

Only the fields the gate needs are declared (pydantic ignores the rest); a payload without them is
refused with the field's name. `repository.clone_url` is used as given (GitHub sends the https URL;
a self-hosted or test setup may send a `file://` URL or a path).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, Field

PR_ACTIONS = ("opened", "synchronize", "reopened")      # a new head sha to gate
HANDLED_EVENTS = ("ping", "push", "pull_request")
_SHA = r"^[0-9a-f]{40}$"
_ZERO_SHA = "0" * 40


class RepositoryIn(BaseModel):
    full_name: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    clone_url: str = Field(min_length=1)
    default_branch: str = "main"


class PushIn(BaseModel):
    ref: str
    after: str = Field(pattern=_SHA)
    deleted: bool = False
    repository: RepositoryIn


class CommitRefIn(BaseModel):
    sha: str = Field(pattern=_SHA)
    ref: str


class PullRequestBodyIn(BaseModel):
    number: int
    head: CommitRefIn
    base: CommitRefIn


class PullRequestIn(BaseModel):
    action: str
    number: int
    pull_request: PullRequestBodyIn
    repository: RepositoryIn


@dataclass(frozen=True)
class GateRequest:
    """A revision the webhook asks the gate to run."""

    full_name: str             # owner/name: the GitHub API path and the stored repository name
    clone_url: str
    default_branch: str
    sha: str
    branch: str
    base_sha: str | None       # PR: the base branch tip until the merge base is known; push: None
    pull_request: int | None = None


@dataclass(frozen=True)
class Ignored:
    reason: str


def from_push(push: PushIn, gated_branches: list[str]) -> GateRequest | Ignored:
    """Pushes to the default branch or to `GATE_GITHUB_BRANCHES` are gated; tags and deletions not."""
    if push.deleted or push.after == _ZERO_SHA:
        return Ignored("branch deleted")
    if not push.ref.startswith("refs/heads/"):
        return Ignored(f"{push.ref} is not a branch")
    branch = push.ref.removeprefix("refs/heads/")
    repo = push.repository
    if branch != repo.default_branch and branch not in gated_branches:
        return Ignored(f"branch {branch!r} is not gated (default {repo.default_branch!r}, "
                       f"GATE_GITHUB_BRANCHES {gated_branches})")
    # The baseline is left to the service: the last accepted revision of the branch, else the parent.
    return GateRequest(repo.full_name, repo.clone_url, repo.default_branch, push.after, branch, None)


def from_pull_request(event: PullRequestIn) -> GateRequest | Ignored:
    if event.action not in PR_ACTIONS:
        return Ignored(f"pull_request action {event.action!r} brings no new commit")
    pr, repo = event.pull_request, event.repository
    return GateRequest(repo.full_name, repo.clone_url, repo.default_branch, pr.head.sha, pr.head.ref,
                       pr.base.sha, pull_request=event.number)


def is_sha(value: str) -> bool:
    return re.fullmatch(_SHA, value) is not None
