"""The real app in a uvicorn thread on a free loopback port, and a git repository on disk with a PR."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn

from gate.api.app import create_app
from gate.config import Settings
from tests.patience import HANG_S

SECRET = "webhook-secret"


@dataclass
class PullRequestRepo:
    path: Path
    first: str        # on main, where the feature branched off: the merge base
    main_tip: str     # main moved on after the branch
    head: str         # the PR's head on branch `feature`

    @property
    def clone_url(self) -> str:
        return self.path.as_uri()


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.com", "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_pr_repo(root: Path) -> PullRequestRepo:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "gate.toml").write_text('[[kernel]]\nname = "attn"\nsources = ["attn.cu"]\n')
    (root / "attn.cu").write_text("// v1\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "v1")
    first = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "-b", "feature")
    (root / "attn.cu").write_text("// v2: faster softmax\n")
    _git(root, "commit", "-q", "-am", "faster softmax")
    head = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "main")
    (root / "README").write_text("main moves on\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "docs")
    return PullRequestRepo(root, first, _git(root, "rev-parse", "HEAD"), head)


def pull_request_payload(repo: PullRequestRepo, action: str = "opened", number: int = 7) -> dict:
    return {
        "action": action,
        "number": number,
        "pull_request": {"number": number,
                         "head": {"sha": repo.head, "ref": "feature", "repo": {"full_name": "octo/flashcore"}},
                         "base": {"sha": repo.main_tip, "ref": "main", "repo": {"full_name": "octo/flashcore"}}},
        "repository": {"full_name": "octo/flashcore", "clone_url": repo.clone_url, "default_branch": "main"},
    }


def signed(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post_event(base_url: str, event: str, payload: dict | bytes, *, delivery: str = "d-1",
               signature: str | None = "sign") -> httpx.Response:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json"}
    if signature == "sign":
        headers["X-Hub-Signature-256"] = signed(body)
    elif signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return httpx.post(f"{base_url}/api/v1/webhooks/github", content=body, headers=headers, timeout=10)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(settings: Settings, **app_kwargs: object) -> Iterator[str]:
    """`create_app(settings, **app_kwargs)` served by uvicorn on loopback; yields its base URL."""
    port = _free_port()
    config = uvicorn.Config(create_app(settings, **app_kwargs), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + HANG_S     # a hang guard: a thread that died fails at once
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)
