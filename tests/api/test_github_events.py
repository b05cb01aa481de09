import pytest
from pydantic import ValidationError

from gate.api.github_events import (
    AwaitingApproval,
    ForkApproval,
    GateRequest,
    Ignored,
    PullRequestIn,
    PushIn,
    from_pull_request,
    from_push,
)

HEAD, BASE = "c" * 40, "b" * 40
REPO = {"full_name": "octo/flashcore", "clone_url": "https://github.com/octo/flashcore.git", "default_branch": "main"}


def _push(ref: str, **extra) -> PushIn:
    return PushIn.model_validate({"ref": ref, "after": HEAD, "repository": REPO, **extra})


def test_push_to_default_branch_is_gated_without_a_base():
    assert from_push(_push("refs/heads/main"), []) == GateRequest(
        "octo/flashcore", REPO["clone_url"], "main", HEAD, "main", None)


def test_push_to_a_configured_branch_is_gated():
    assert isinstance(from_push(_push("refs/heads/release"), ["release"]), GateRequest)


@pytest.mark.parametrize(("ref", "extra"), [
    ("refs/heads/feature", {}),
    ("refs/tags/v1", {}),
    ("refs/heads/main", {"deleted": True}),
])
def test_push_that_asks_for_nothing_is_ignored_with_a_reason(ref, extra):
    assert isinstance(from_push(_push(ref, **extra), []), Ignored)


def test_pull_request_uses_head_and_base_tip_until_the_merge_base_is_known():
    event = PullRequestIn.model_validate({
        "action": "synchronize", "number": 9, "repository": REPO,
        "pull_request": {"number": 9, "head": {"sha": HEAD, "ref": "f", "repo": {"full_name": "octo/flashcore"}},
                         "base": {"sha": BASE, "ref": "main"}},
    })
    assert from_pull_request(event) == GateRequest("octo/flashcore", REPO["clone_url"], "main", HEAD, "f",
                                                   BASE, pull_request=9)


def test_pull_request_with_a_bad_sha_is_refused_naming_the_field():
    with pytest.raises(ValidationError, match=r"pull_request\.head\.sha"):
        PullRequestIn.model_validate({
            "action": "opened", "number": 1, "repository": REPO,
            "pull_request": {"number": 1, "head": {"sha": "--upload-pack=x", "ref": "f"},
                             "base": {"sha": BASE, "ref": "main"}},
        })


def test_repository_full_name_must_be_owner_slash_name():
    with pytest.raises(ValidationError, match="full_name"):
        _push("refs/heads/main", repository={**REPO, "full_name": "../../etc"})


def _pr(action: str = "opened", head_repo: str | None = "octo/k", label: str | None = None) -> PullRequestIn:
    return PullRequestIn.model_validate({
        "action": action, "number": 3, "label": {"name": label} if label else None,
        "pull_request": {"number": 3, "head": {"sha": "a" * 40, "ref": "f",
                                               "repo": {"full_name": head_repo} if head_repo else None},
                         "base": {"sha": "b" * 40, "ref": "main"}},
        "repository": {"full_name": "octo/k", "clone_url": "https://github.com/octo/k.git"}})


def test_fork_pull_requests_wait_for_approval_and_same_repository_ones_do_not():
    assert isinstance(from_pull_request(_pr()), GateRequest)
    assert isinstance(from_pull_request(_pr(head_repo="eve/k")), AwaitingApproval)
    assert isinstance(from_pull_request(_pr(head_repo=None)), AwaitingApproval)       # deleted fork
    assert isinstance(from_pull_request(_pr("synchronize", "eve/k")), AwaitingApproval)
    assert isinstance(from_pull_request(_pr("labeled", "eve/k", "gate:approved")), GateRequest)
    assert isinstance(from_pull_request(_pr("labeled", "eve/k", "bug")), Ignored)
    assert isinstance(from_pull_request(_pr(head_repo="eve/k"), ForkApproval(required=False)), GateRequest)
