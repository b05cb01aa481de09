"""Request bodies capped for every route (`GATE_MAX_BODY_BYTES`), before anything reads them.

Issue 12: the webhook read a whole 300 MB unsigned body (+477 MiB) before it checked the signature.
Here a declared `Content-Length` over the cap is answered 413 before a byte of the body is read,
and a chunked body is cut off as soon as what arrived passes the cap; the server then closes the
connection, so the rest is never read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import HTTPException
from fastapi.responses import JSONResponse

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyTooLarge(HTTPException):
    """An HTTPException, so that FastAPI's own body reading lets it through and renders the 413."""

    def __init__(self, max_bytes: int):
        super().__init__(413, f"the request body is larger than {max_bytes} bytes "
                              "(GATE_MAX_BODY_BYTES); nothing of it was kept")


class BodyLimit:
    """ASGI middleware: 413 for a body over `max_bytes`, declared or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if declared_length(scope) > self.max_bytes:
            await _refuse(BodyTooLarge(self.max_bytes), scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge as exc:    # read outside FastAPI's handlers (a middleware, a raw route)
            if started:
                raise
            await _refuse(exc, scope, receive, send)


def declared_length(scope: Scope) -> int:
    """The Content-Length header; -1 when absent (chunked) or unreadable (the server refuses those)."""
    for name, value in scope["headers"]:      # always in an HTTP scope (ASGI spec)
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
    return -1


async def _refuse(exc: BodyTooLarge, scope: Scope, receive: Receive, send: Send) -> None:
    response = JSONResponse({"detail": exc.detail}, status_code=exc.status_code,
                            headers={"Connection": "close"})
    await response(scope, receive, send)
