"""Who may do what, decided on the headers alone, before a request's body is read (issue 24: 25 MiB
bodies were read before any check; 100 concurrent unsigned webhooks cost +2.2 GB):

- a write without `Authorization: Bearer <GATE_API_TOKEN>`, when that is set, is refused (401), and
  with `GATE_READ_TOKEN_REQUIRED=1` a read likewise (`OPEN_PATHS` and `OPEN_PREFIXES` excepted);
- a webhook without `X-Hub-Signature-256` is refused (401) likewise; one with the header must be
  read to check its HMAC, so such bodies, and writes when no token is set, are *unauthenticated
  bodies*: marked here for `gate.api.body_limit`, which holds all of them within one budget
  (`GATE_UNAUTHENTICATED_BODY_BYTES`) and a deadline;
- a write a browser sends from another site (`Sec-Fetch-Site: cross-site` or `same-site`, or an
  `Origin` that is not this server's) is refused (403): with no token set, a page elsewhere could
  otherwise cancel revisions through a visitor's browser (issue 44). GitHub's webhook sends neither
  header.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from urllib.parse import urlsplit

from fastapi import HTTPException, Request, status

from gate.api.body_limit import UNAUTHENTICATED, ASGIApp, Receive, Refusal, Scope, Send, answer
from gate.config import Settings
from gate.domain import routes

WEBHOOK_PATH = routes.GITHUB_WEBHOOK
OPEN_PATHS = (routes.HEALTHZ,)              # answered without a token whatever the setting
OPEN_PREFIXES = (routes.STATIC + "/",)      # the dashboards' own CSS and scripts
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
WRITE_REFUSAL = "a bearer token is required for writes (Authorization: Bearer <GATE_API_TOKEN>)"
READ_REFUSAL = "a bearer token is required for reads here (GATE_READ_TOKEN_REQUIRED)"
CROSS_SITE_REFUSAL = "a write from a page of another site is refused"


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
    """ASGI middleware: refusals that need only the headers; unauthenticated bodies marked."""

    def __init__(self, app: ASGIApp, settings: Settings):
        self.app, self.settings = app, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # An ASGI HTTP scope always holds `headers` (the spec requires the key).
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        method, path = scope["method"], scope["path"]
        if method not in SAFE_METHODS and from_another_site(headers):
            await answer(Refusal(403, CROSS_SITE_REFUSAL), scope, receive, send)
            return
        refusal = self._refusal(method, path, headers)
        if refusal is not None:
            await answer(Refusal(401, refusal, {"WWW-Authenticate": 'Bearer realm="gate"'}), scope, receive, send)
            return
        scope[UNAUTHENTICATED] = method not in SAFE_METHODS and (path == WEBHOOK_PATH or not self.settings.api_token)
        await self.app(scope, receive, send)

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


def from_another_site(headers: Mapping[str, str]) -> bool:
    """A browser's request made by a page of another site: its `Sec-Fetch-Site` says so (Fetch
    Metadata), or, from a browser without it, its `Origin` names another host than `Host`."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site in ("cross-site", "same-site")
    origin = headers.get("origin")
    return origin is not None and urlsplit(origin).netloc != headers.get("host")
