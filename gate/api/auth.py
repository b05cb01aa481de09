"""Who may do what, decided before a request's body is read.

Writes need `Authorization: Bearer <GATE_API_TOKEN>` when that is set; with
`GATE_READ_TOKEN_REQUIRED=1` reads (pages and JSON) need it too, `/healthz` and the static files
excepted. `AuthBeforeBody` decides on the headers alone (issue 24: 25 MiB bodies were read before
any check; 100 concurrent unsigned webhooks cost +2.2 GB):

- a write without the token is refused (401) before a byte of its body is read;
- a webhook without `X-Hub-Signature-256` is refused (401) likewise; one with the header must be
  read to check its HMAC, so such bodies, and writes when no token is set, are *unauthenticated
  bodies*: all of them together may hold at most `GATE_UNAUTHENTICATED_BODY_BYTES` (each counts its
  Content-Length, or GATE_MAX_BODY_BYTES when chunked); past it the answer is 503 with Retry-After
  and the body is not read.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from fastapi import HTTPException, Request, status
from fastapi.responses import JSONResponse

from gate.api.body_limit import ASGIApp, Receive, Scope, Send, declared_length
from gate.config import Settings
from gate.domain import routes

WEBHOOK_PATH = routes.GITHUB_WEBHOOK
OPEN_PATHS = (routes.HEALTHZ,)              # answered without a token whatever the setting
OPEN_PREFIXES = (routes.STATIC + "/",)      # the dashboards' own CSS and scripts
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
BUSY_RETRY_AFTER_S = 5
WRITE_REFUSAL = "a bearer token is required for writes (Authorization: Bearer <GATE_API_TOKEN>)"
READ_REFUSAL = "a bearer token is required for reads here (GATE_READ_TOKEN_REQUIRED)"


def token_matches(headers: Mapping[str, str], token: str) -> bool:
    """`Authorization: Bearer <token>` among `headers` (lower-case names, or Starlette's `Headers`),
    compared in constant time. The one place that reads the header."""
    scheme, _, given = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def require_write_token(request: Request) -> None:
    """The route's own check (and its OpenAPI 401); `AuthBeforeBody` has refused the same earlier."""
    token = request.app.state.gate.settings.api_token
    if token and not token_matches(request.headers, token):
        raise HTTPException(status_code=status.HTTP_401_UNAUTHORIZED, detail=WRITE_REFUSAL,
                            headers={"WWW-Authenticate": 'Bearer realm="gate"'})


class AuthBeforeBody:
    """ASGI middleware: refusals that need only the headers, and the unauthenticated-body budget."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.app, self.settings = app, settings
        self.in_flight = 0          # bytes of unauthenticated bodies being read now (one event loop)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # An ASGI HTTP scope always holds `headers` (the spec requires the key).
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        refusal = self._refusal(scope["method"], scope["path"], headers)
        if refusal is not None:
            await _answer(401, refusal, scope, receive, send, {"WWW-Authenticate": 'Bearer realm="gate"'})
            return
        if scope["method"] in SAFE_METHODS or not self._unauthenticated(scope["path"], headers):
            await self.app(scope, receive, send)
            return
        size = declared_length(scope)
        size = self.settings.max_body_bytes if size < 0 else min(size, self.settings.max_body_bytes)
        if size and self.in_flight + size > self.settings.unauthenticated_body_bytes:
            await _answer(503, "too many unauthenticated request bodies are being read at once "
                               "(GATE_UNAUTHENTICATED_BODY_BYTES); retry later", scope, receive, send,
                          {"Retry-After": str(BUSY_RETRY_AFTER_S)})
            return
        self.in_flight += size
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= size

    def _refusal(self, method: str, path: str, headers: dict[str, str]) -> str | None:
        token = self.settings.api_token
        if method in SAFE_METHODS:
            needs = self.settings.read_token_required and path not in OPEN_PATHS \
                and not path.startswith(OPEN_PREFIXES)
            return READ_REFUSAL if needs and not token_matches(headers, token or "") else None
        if path == WEBHOOK_PATH:
            if self.settings.github_webhook_secret and "x-hub-signature-256" not in headers:
                return "X-Hub-Signature-256 is missing: an unsigned webhook is refused unread"
            return None
        if token and not token_matches(headers, token):
            return WRITE_REFUSAL
        return None

    def _unauthenticated(self, path: str, headers: dict[str, str]) -> bool:
        """A body read before its sender is known: a webhook's (checked by its HMAC after), or any
        write's when no token is set."""
        return path == WEBHOOK_PATH or not self.settings.api_token


async def _answer(code: int, detail: str, scope: Scope, receive: Receive, send: Send,
                  headers: dict[str, str]) -> None:
    """Answer without reading the body; the connection closes, so its rest is never read."""
    response = JSONResponse({"detail": detail}, status_code=code, headers={**headers, "Connection": "close"})
    await response(scope, receive, send)
