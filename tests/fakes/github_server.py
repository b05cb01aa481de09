"""A stand-in for GitHub's REST API: a real HTTP server on loopback (stdlib `http.server` in a thread).

It records every request, checks paths, headers and bodies against GitHub's documented request
schemas (REST API version 2022-11-28) and answers like GitHub: 201/200 when the request fits,
401 for bad credentials, 422 for a body that does not fit (the reason is kept in `problems`).
Faults can be queued: `fail("POST", "/statuses/", status=502, times=2)`, or a secondary rate limit
`rate_limit("POST", "/statuses/", retry_after_s=1)`.

Also a receiver for outbound webhooks: `POST /hooks/<name>` (signature checked when
`webhook_secret` is set).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.patience import HANG_S

API_VERSION = "2022-11-28"
STATUS_STATES = {"error", "failure", "pending", "success"}
CHECK_STATUSES = {"queued", "in_progress", "completed", "waiting", "requested", "pending"}
CONCLUSIONS = {"action_required", "cancelled", "failure", "neutral", "success", "skipped",
               "stale", "timed_out"}
CHECK_CREATE_KEYS = {"name", "head_sha", "details_url", "external_id", "status", "started_at",
                     "conclusion", "completed_at", "output", "actions"}
CHECK_UPDATE_KEYS = CHECK_CREATE_KEYS - {"head_sha"}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]          # lower-case names
    raw: bytes
    body: Any                        # parsed JSON, or None
    answered: int = 0


@dataclass
class Fault:
    method: str
    path_pattern: str
    status: int
    times: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"message": "Server Error"})


class FakeGitHub:
    def __init__(self, *, token: str = "test-token", app_id: str | None = None,
                 app_public_key_pem: str | None = None, installation_id: int = 4242,
                 webhook_secret: str | None = None, token_lifetime_s: int = 3600):
        self.token = token
        self.token_lifetime_s = token_lifetime_s
        self.app_id = app_id
        self.app_public_key_pem = app_public_key_pem
        self.installation_id = installation_id
        self.webhook_secret = webhook_secret
        self.requests: list[Recorded] = []
        self.problems: list[str] = []
        self.faults: list[Fault] = []
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.pulls: dict[str, dict[str, Any]] = {}       # "owner/name#7" -> the pull request GitHub returns
        self.issued_tokens: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail(self, method: str, path_pattern: str, *, status: int = 502, times: int = 1,
             headers: dict[str, str] | None = None) -> None:
        self.faults.append(Fault(method, path_pattern, status, times, headers or {}))

    def rate_limit(self, method: str, path_pattern: str, *, retry_after_s: int = 1, times: int = 1) -> None:
        """GitHub's secondary rate limit: 403, `Retry-After`, and a message saying so."""
        fault = Fault(method, path_pattern, 403, times, {"Retry-After": str(retry_after_s)},
                      {"message": "You have exceeded a secondary rate limit."})
        self.faults.append(fault)

    def accepted(self, method: str, path_pattern: str) -> list[Recorded]:
        """Requests to matching paths that the stand-in took (2xx)."""
        return [r for r in self.requests if r.method == method and re.search(path_pattern, r.path)
                and 200 <= r.answered < 300]

    def wait_for(self, predicate: Any, timeout_s: float = HANG_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        raise AssertionError(f"stand-in never saw what the test waited for; got {self.summary()}")

    def summary(self) -> list[str]:
        return [f"{r.method} {r.path} -> {r.answered}" for r in self.requests]

    # -- request handling (runs on the server's threads) --------------------------------------

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict, Any]:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record = Recorded(method, path, headers, raw, body)
        with self._lock:
            self.requests.append(record)
            status, extra, answer = self._answer(record)
            record.answered = status
        return status, extra, answer

    def _answer(self, r: Recorded) -> tuple[int, dict, Any]:
        for fault in self.faults:
            if fault.times > 0 and fault.method == r.method and re.search(fault.path_pattern, r.path):
                fault.times -= 1
                return fault.status, fault.headers, fault.body
        if r.path.startswith("/hooks/"):
            return self._webhook(r)
        problems = self._header_problems(r)
        if problems:
            return self._refuse(422, r, problems)
        if m := re.fullmatch(r"/repos/([^/]+)/([^/]+)/installation", r.path):
            if r.method == "GET" and self._jwt_ok(r):
                return 200, {}, {"id": self.installation_id, "account": {"login": m.group(1)}}
            return self._refuse(401, r, ["GET installation needs a valid app JWT"])
        if m := re.fullmatch(r"/app/installations/(\d+)/access_tokens", r.path):
            if r.method != "POST" or int(m.group(1)) != self.installation_id or not self._jwt_ok(r):
                return self._refuse(401, r, ["access_tokens needs POST, the installation id and a JWT"])
            token = f"ghs_fake{len(self.issued_tokens)}"
            self.issued_tokens.append(token)
            expires = (datetime.now(UTC) + timedelta(seconds=self.token_lifetime_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 201, {}, {"token": token, "expires_at": expires}
        if not self._token_ok(r):
            return self._refuse(401, r, [f"{r.path}: bad credentials"])
        if re.fullmatch(r"/repos/[^/]+/[^/]+/statuses/[0-9a-f]{7,64}", r.path) and r.method == "POST":
            return self._checked(r, _status_problems(r.body), 201, lambda: {"id": len(self.requests), **r.body})
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", r.path)) and r.method == "GET":
            pull = self.pulls.get(f"{m.group(1)}#{m.group(2)}")
            return (200, {}, pull) if pull is not None else self._refuse(404, r, [f"no pull {r.path}"])
        if re.fullmatch(r"/repos/[^/]+/[^/]+/check-runs", r.path) and r.method == "POST":
            return self._checked(r, _check_problems(r.body, CHECK_CREATE_KEYS, create=True), 201,
                                 lambda: self._store_run(None, r.body))
        if m := re.fullmatch(r"/repos/[^/]+/[^/]+/check-runs/(\d+)", r.path):
            run_id = int(m.group(1))
            if r.method != "PATCH" or run_id not in self.check_runs:
                return self._refuse(404, r, [f"no check run {run_id}"])
            return self._checked(r, _check_problems(r.body, CHECK_UPDATE_KEYS, create=False), 200,
                                 lambda: self._store_run(run_id, r.body))
        return self._refuse(404, r, [f"{r.method} {r.path}: not a GitHub endpoint this stand-in knows"])

    def _checked(self, r: Recorded, problems: list[str], status: int, answer: Any) -> tuple[int, dict, Any]:
        return self._refuse(422, r, problems) if problems else (status, {}, answer())

    def _refuse(self, status: int, r: Recorded, problems: list[str]) -> tuple[int, dict, Any]:
        self.problems.extend(f"{r.method} {r.path}: {p}" for p in problems)
        return status, {}, {"message": "; ".join(problems)}

    def _store_run(self, run_id: int | None, body: dict[str, Any]) -> dict[str, Any]:
        run_id = run_id or len(self.check_runs) + 1
        self.check_runs[run_id] = {**self.check_runs.get(run_id, {}), **body, "id": run_id}
        return self.check_runs[run_id]

    def _header_problems(self, r: Recorded) -> list[str]:
        problems = []
        if r.headers.get("accept") != "application/vnd.github+json":
            problems.append(f"Accept is {r.headers.get('accept')!r}")
        if r.headers.get("x-github-api-version") != API_VERSION:
            problems.append(f"X-GitHub-Api-Version is {r.headers.get('x-github-api-version')!r}")
        if not r.headers.get("user-agent"):
            problems.append("no User-Agent")
        return problems

    def _bearer(self, r: Recorded) -> str:
        auth = r.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""

    def _token_ok(self, r: Recorded) -> bool:
        return self._bearer(r) in {self.token, *self.issued_tokens}

    def _jwt_ok(self, r: Recorded) -> bool:
        if not self.app_public_key_pem:
            return False
        try:
            claims = jwt.decode(self._bearer(r), self.app_public_key_pem, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]})
        except jwt.PyJWTError as exc:
            self.problems.append(f"{r.path}: JWT refused: {exc}")
            return False
        return str(claims["iss"]) == str(self.app_id) and claims["exp"] - claims["iat"] <= 600

    def _webhook(self, r: Recorded) -> tuple[int, dict, Any]:
        if self.webhook_secret is not None:
            expected = "sha256=" + hmac.new(self.webhook_secret.encode(), r.raw, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(expected, r.headers.get("x-gate-signature-256", "")):
                return self._refuse(401, r, ["bad X-Gate-Signature-256"])
        return 200, {}, {"ok": True}


def make_app_key() -> tuple[str, str]:
    """(private PEM, public PEM) of a throwaway GitHub App key: the private half configures the
    gate, the public half lets the stand-in check the app's JWTs as GitHub does."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def _status_problems(body: Any) -> list[str]:
    """POST /repos/{owner}/{repo}/statuses/{sha}: state (enum, required), target_url, description, context."""
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    problems = [f"unknown key {k!r}" for k in body if k not in {"state", "target_url", "description", "context"}]
    if body.get("state") not in STATUS_STATES:
        problems.append(f"state {body.get('state')!r} not in {sorted(STATUS_STATES)}")
    for key in ("target_url", "description", "context"):
        if key in body and not isinstance(body[key], str):
            problems.append(f"{key} is not a string")
    if len(body.get("description") or "") > 140:
        problems.append(f"description is {len(body['description'])} characters (max 140)")
    if not str(body.get("target_url", "http")).startswith(("http://", "https://")):
        problems.append("target_url is not an http(s) URL")
    return problems


def _check_problems(body: Any, allowed: set[str], *, create: bool) -> list[str]:
    """POST/PATCH check-runs: name and head_sha required on create, enums, output.title+summary."""
    if not isinstance(body, dict):
        return ["body is not a JSON object"]
    problems = [f"unknown key {k!r}" for k in body if k not in allowed]
    if create:
        problems += [f"{k} is required" for k in ("name", "head_sha") if not isinstance(body.get(k), str)]
    if "status" in body and body["status"] not in CHECK_STATUSES:
        problems.append(f"status {body['status']!r} not in {sorted(CHECK_STATUSES)}")
    if "conclusion" in body and body["conclusion"] not in CONCLUSIONS:
        problems.append(f"conclusion {body['conclusion']!r} not in {sorted(CONCLUSIONS)}")
    if body.get("status") == "completed" and "conclusion" not in body:
        problems.append("status completed needs a conclusion")
    if "output" in body:
        output = body["output"]
        if not isinstance(output, dict) or not all(isinstance(output.get(k), str) for k in ("title", "summary")):
            problems.append("output needs title and summary strings")
        elif len(output["summary"]) > 65535:
            problems.append("output.summary longer than 65535 characters")
    return problems


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, answer = fake.handle(self.command, self.path, headers, raw)
            data = json.dumps(answer).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **extra}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the stand-in keeps its own record of requests."""

    return Handler
