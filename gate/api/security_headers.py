"""Headers on every answer that keep a browser from running, framing or guessing at the gate's pages
(issue 44: none were sent).

- `Content-Security-Policy`: scripts and styles only from the gate itself (plotly and gate.js are
  served by it), no plugins, no `<base>`, forms that post only here, no framing. Styles may be
  inline: plotly writes its own, and the legends colour their glyphs. The one inline handler of the
  pages (`onchange="this.form.submit()"` on the kernel page's selects) is allowed by its hash.
- `X-Frame-Options: DENY`: no framing, for browsers without `frame-ancestors`.
- `X-Content-Type-Options: nosniff`: an artifact served as text is never read as HTML or script.

An answer that sets its own policy keeps it (`/docs` allows Swagger UI's inline start-up script).
"""

from __future__ import annotations

import base64
import hashlib

from gate.api.body_limit import ASGIApp, Message, Receive, Scope, Send


def _hash(source: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()}'"


def policy(scripts: tuple[str, ...] = (), handlers: tuple[str, ...] = ()) -> str:
    """The policy, allowing exactly these inline `scripts` and event `handlers` by their hashes."""
    allowed = ["'self'", *(["'unsafe-hashes'"] if handlers else []), *map(_hash, (*scripts, *handlers))]
    return "; ".join([
        "default-src 'self'", f"script-src {' '.join(allowed)}", "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
        "frame-ancestors 'none'"])


PAGES = policy(handlers=("this.form.submit()",))
HEADERS = {b"x-frame-options": b"DENY", b"x-content-type-options": b"nosniff"}


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP answer that does not set them itself."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                wanted = {b"content-security-policy": PAGES.encode(), **HEADERS}
                message["headers"] = [*message.get("headers", []),
                                      *((name, value) for name, value in wanted.items() if name not in present)]
            await send(message)

        await self.app(scope, receive, with_headers)
