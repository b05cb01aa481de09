"""GitHub webhook payloads -> what to gate. Pure: validation and the decision, no I/O.

Only the fields the gate needs are declared (pydantic ignores the rest); a payload without them, or
with a value its column cannot hold (`gate.api.schemas`), is refused with the field's name. `repository.clone_url` is used as given (GitHub sends the https URL;
a self-hosted or test setup may send a `file://` URL or a path).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field, field_validator

from gate.api.schemas import PRINTABLE, column_number, column_text, repository_name
from gate.storage import limits

PR_ACTIONS = ("opened", "synchronize", "reopened")      # a new head sha to gate
HANDLED_EVENTS = ("ping", "push", "pull_request", "issue_comment")
_SHA = r"^[0-9a-f]{40}$"
_ZERO_SHA = "0" * 40
_BRANCH_REF = "refs/heads/"
Number = column_number(limits.PULL_REQUEST_RANGE)        # pull request and issue numbers
Branch = column_text(limits.BRANCH_CHARS)
DefaultBranch = column_text(limits.DEFAULT_BRANCH_CHARS)


class RepositoryIn(BaseModel):
    full_name: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", max_length=limits.REPOSITORY_NAME_CHARS)
    clone_url: str = Field(min_length=1, pattern=PRINTABLE)
    default_branch: DefaultBranch = "main"

    _clone_url_fits = field_validator("clone_url")(repository_name)


class PushIn(BaseModel):
    ref: str = Field(pattern=PRINTABLE, max_length=len(_BRANCH_REF) + limits.BRANCH_CHARS)
    after: str = Field(pattern=_SHA)
    deleted: bool = False
    repository: RepositoryIn


class RepoRefIn(BaseModel):
    full_name: str | None = None


class LabelIn(BaseModel):
    name: str


class CommitRefIn(BaseModel):
    sha: str = Field(pattern=_SHA)
    ref: Branch
    repo: RepoRefIn | None = None       # None: GitHub sends null when the fork was deleted


class PullRequestBodyIn(BaseModel):
    number: Number
    head: CommitRefIn
    base: CommitRefIn
    labels: list[LabelIn] = Field(default_factory=list)


class PullRequestIn(BaseModel):
    action: str
    number: Number
    pull_request: PullRequestBodyIn
    repository: RepositoryIn
    label: LabelIn | None = None        # the label just added (action "labeled")


class IssueIn(BaseModel):
    number: Number
    pull_request: dict | None = None    # present when the issue is a pull request


class CommentIn(BaseModel):
    body: str
    author_association: str = "NONE"


class IssueCommentIn(BaseModel):
    action: str
    issue: IssueIn
    comment: CommentIn
    repository: RepositoryIn


@dataclass(frozen=True)
class ForkApproval:
    """Code from forks is not built until a maintainer approves its head: by adding `label` (only
    users with triage rights can), or by commenting `comment` as one of `maintainers` (GitHub's
    author_association). A new push to the fork asks for approval again: an approval is for the
    head it was given for, never for what the fork pushes later."""

    required: bool = True
    label: str = "gate:approved"
    comment: str = "/gate run"
    maintainers: tuple[str, ...] = ("OWNER", "MEMBER", "COLLABORATOR")

    def how(self) -> str:
        return f"a maintainer adds the label {self.label!r} or comments {self.comment!r}"


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


@dataclass(frozen=True)
class AwaitingApproval:
    """A fork's pull request: nothing is built until a maintainer approves (`ForkApproval`)."""

    request: GateRequest
    reason: str


def from_push(push: PushIn, gated_branches: list[str]) -> GateRequest | Ignored:
    """Pushes to the default branch or to `GATE_GITHUB_BRANCHES` are gated; tags and deletions not."""
    if push.deleted or push.after == _ZERO_SHA:
        return Ignored("branch deleted")
    if not push.ref.startswith(_BRANCH_REF):
        return Ignored(f"{push.ref} is not a branch")
    branch = push.ref.removeprefix(_BRANCH_REF)
    repo = push.repository
    if branch != repo.default_branch and branch not in gated_branches:
        return Ignored(f"branch {branch!r} is not gated (default {repo.default_branch!r}, "
                       f"GATE_GITHUB_BRANCHES {gated_branches})")
    # The baseline is left to the service: the last accepted revision of the branch, else the parent.
    return GateRequest(repo.full_name, repo.clone_url, repo.default_branch, push.after, branch, None)


def from_pull_request(event: PullRequestIn,
                      approval: ForkApproval = ForkApproval()) -> GateRequest | Ignored | AwaitingApproval:
    approved_now = event.action == "labeled" and event.label is not None and event.label.name == approval.label
    if event.action not in PR_ACTIONS and not approved_now:
        return Ignored(f"pull_request action {event.action!r} brings no new commit")
    pr, repo = event.pull_request, event.repository
    request = GateRequest(repo.full_name, repo.clone_url, repo.default_branch, pr.head.sha, pr.head.ref,
                          pr.base.sha, pull_request=event.number)
    head = pr.head.repo         # None: the fork was deleted
    fork = head is None or head.full_name != repo.full_name      # the head lives in another repository
    if not approval.required or not fork:
        return Ignored("the label approves forks only; this head was gated when it came") if approved_now \
            else request
    if approved_now:
        return request
    return AwaitingApproval(request, f"fork pull request #{event.number}: not built until {approval.how()}")


def approving_comment(event: IssueCommentIn, approval: ForkApproval = ForkApproval()) -> int | Ignored:
    """The pull request number a maintainer's approval comment asks to gate, or why it asks nothing."""
    if event.action != "created" or event.issue.pull_request is None:
        return Ignored("not a new comment on a pull request")
    if event.comment.body.strip() != approval.comment:
        return Ignored(f"the comment is not {approval.comment!r}")
    if event.comment.author_association not in approval.maintainers:
        return Ignored(f"{event.comment.author_association} may not approve (maintainers: "
                       f"{', '.join(approval.maintainers)})")
    return event.issue.number
