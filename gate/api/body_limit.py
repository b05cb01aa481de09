"""Request bodies: capped in size for every route, read against a deadline, and those read before
their sender is known held within one budget, before anything reads them.

- Size (issue 12: the webhook read a whole 300 MB unsigned body, +477 MiB, before it checked the
  signature): a declared `Content-Length` over `GATE_MAX_BODY_BYTES` is answered 413 before a
  byte of the body is read, and a chunked body is cut off as soon as what arrived passes the cap.
- Time (issue 44: two connections that declared 16 MiB and sent nothing held the whole budget
  below for 190 s, and every signed webhook got 503): a body must start within `GRACE_S` and then
  keep up `MIN_RATE_BPS` on average (the model of Apache's mod_reqtimeout, `body=20,MinRate=500`;
  stricter here, since the gate's bodies are small and GitHub itself gives up a delivery after
  10 s); a slower one is answered 408.
- Budget (issue 24: 100 unsigned 20 MiB webhooks cost +2.2 GB): bodies read before their sender
  is known (`gate.api.auth` marks them) together hold at most `GATE_UNAUTHENTICATED_BODY_BYTES`,
  counted as their bytes arrive, so a sender that declares much and sends little holds little;
  the chunk that would pass it is answered 503 with Retry-After.

Every refusal closes the connection, so the rest of the body is never read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import HTTPException
from fastapi.responses import JSONResponse

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNAUTHENTICATED = "gate.unauthenticated"   # the scope key `gate.api.auth` sets on such requests
GRACE_S = 5.0                  # from the request's headers to the first bytes of its body
MIN_RATE_BPS = 64 << 10        # then on average, from the headers on: a 25 MiB body may take 6.7 minutes
BUSY_RETRY_AFTER_S = 5
CLOSE = {"Connection": "close"}


class Refusal(HTTPException):
    """A request refused before (or while) its body is read; the connection closes. An HTTPException,
    so that FastAPI's own body reading lets it through and renders it."""

    def __init__(self, status_code: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(status_code, detail, headers={**CLOSE, **(headers or {})})


def too_large(max_bytes: int) -> Refusal:
    return Refusal(413, f"the request body is larger than {max_bytes} bytes (GATE_MAX_BODY_BYTES); "
                            "nothing of it was kept")


def too_slow(received: int) -> Refusal:
    return Refusal(408, f"the request body came too slowly ({received} bytes arrived; it must start within "
                            f"{GRACE_S:g} s and then keep up {MIN_RATE_BPS >> 10} KiB/s)")


def budget_full() -> Refusal:
    return Refusal(503, "too many unauthenticated request bodies are being read at once "
                            "(GATE_UNAUTHENTICATED_BODY_BYTES); retry later", {"Retry-After": str(BUSY_RETRY_AFTER_S)})


class BodyLimit:
    """ASGI middleware: the size cap, the deadline and the unauthenticated-body budget (module doc)."""

    def __init__(self, app: ASGIApp, max_bytes: int, unauthenticated_bytes: int):
        self.app, self.max_bytes, self.budget_bytes = app, max_bytes, unauthenticated_bytes
        self.held = 0       # bytes of unauthenticated bodies that arrived and are held now (one event loop)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if declared_length(scope) > self.max_bytes:
            await answer(too_large(self.max_bytes), scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        started, received, held, ended, answered = loop.time(), 0, 0, False, False
        counted = bool(scope.get(UNAUTHENTICATED))

        async def limited_receive() -> Message:
            nonlocal received, held, ended
            if ended:               # the body is whole: what follows is only a wait for the disconnect
                return await receive()
            left = started + GRACE_S + received / MIN_RATE_BPS - loop.time()
            try:
                message = await asyncio.wait_for(receive(), max(left, 0.0))
            except TimeoutError:
                raise too_slow(received) from None
            chunk = len(message.get("body", b""))
            received += chunk
            ended = message["type"] != "http.request" or not message.get("more_body", False)
            if received > self.max_bytes:
                raise too_large(self.max_bytes)
            if counted and chunk:
                if self.held + chunk > self.budget_bytes:
                    raise budget_full()
                self.held += chunk
                held += chunk
            return message

        async def watched_send(message: Message) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except Refusal as exc:    # read outside FastAPI's handlers (a middleware, a raw route)
            if answered:
                raise
            await answer(exc, scope, receive, send)
        finally:
            self.held -= held


def declared_length(scope: Scope) -> int:
    """The Content-Length header; -1 when absent (chunked) or unreadable (the server refuses those)."""
    for name, value in scope["headers"]:      # always in an HTTP scope (ASGI spec)
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
    return -1


async def answer(refusal: HTTPException, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer `refusal` without reading the body: the connection closes, so its rest is never read."""
    response = JSONResponse({"detail": refusal.detail}, status_code=refusal.status_code, headers=refusal.headers)
    await response(scope, receive, send)
