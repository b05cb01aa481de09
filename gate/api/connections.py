"""The server's connections: a cap on how many are open, a deadline for a request's headers, and a
log that says a repeated error once in a while instead of every time.

Issue 44: 21,000 idle half-requests took every file descriptor of `gate serve`: `/healthz` timed out
and the log grew 44 MB ("Too many open files", 100,351 times) in 45 s. uvicorn's own settings do not
help (`limit_concurrency` answers only requests that arrived, while an idle socket holds its
descriptor; `timeout_keep_alive` starts after a response; h11 has no header deadline), so its
HTTP/1.1 protocol gets two rules here, at the socket:

- a connection waiting for a request's headers (since it was made, or since its last answer) is
  closed after `HEADER_TIMEOUT_S`, and one whose body is still coming once it was answered (a route
  that reads none, a 404) is closed then: uvicorn would drain that body for as long as it trickles;
- at most `max_connections` are open: a new one past the cap closes the connection that has waited
  longest for its headers (an idle socket costs its owner nothing to open again; a request in
  progress is never dropped), or itself when every one has a request in progress.

A reverse proxy in front does this better (docs/deploy.md); these rules keep the gate standing where
there is none (measured: docs/security.md).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import threading
import time

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0     # nginx's client_header_timeout is 60 s; the gate's clients send at once
FD_RESERVE = 256            # descriptors kept for the database, git's pipes, artifacts and the logs
BACKLOG = 2048              # uvicorn's: asyncio accepts up to this many at once, before any is capped
REPEAT_WINDOW_S = 10.0


def guarded_h11(max_connections: int) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol with the cap and the header deadline (module doc); one class per server."""
    waiting: dict[H11Protocol, None] = {}      # connections waiting for headers, longest first

    class Guarded(H11Protocol):
        deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                if not waiting:
                    transport.close()
                    return
                longest = next(iter(waiting))
                del waiting[longest]            # its deadline goes with it, in `connection_lost`
                longest.transport.close()
            self.start_waiting()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:      # the request's headers are in
                self.stop_waiting()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.conn.their_state is h11.IDLE:
                self.start_waiting()
            elif self.conn.their_state is h11.SEND_BODY and self.cycle.response_complete:
                self.transport.close()          # the rest of a body no route read: never drained

        def connection_lost(self, exc: Exception | None) -> None:
            self.stop_waiting()
            super().connection_lost(exc)

        def start_waiting(self) -> None:
            self.stop_waiting()
            waiting[self] = None
            self.deadline = self.loop.call_later(HEADER_TIMEOUT_S, self.transport.close)

        def stop_waiting(self) -> None:
            waiting.pop(self, None)
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

    return Guarded


def descriptor_cap(wanted: int) -> int:
    """`wanted` connections, at most what this process may open less `FD_RESERVE` and one accept
    batch (`BACKLOG`); the soft limit on open files is raised to the hard one first (a service's
    soft limit is often 1,024, its hard one far more)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard == resource.RLIM_INFINITY:
        return wanted
    return max(16, min(wanted, hard - FD_RESERVE - BACKLOG))


class RepeatsCut(logging.Filter):
    """Lets a warning or error through at most once per `window_s` for each logger and message
    template; the next one let through says how many were left out meanwhile."""

    def __init__(self, window_s: float = REPEAT_WINDOW_S):
        super().__init__()
        self.window_s = window_s
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}     # key -> (last let through, cut since)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key, now = (record.name, str(record.msg)), time.monotonic()
        with self._lock:
            last, cut = self._seen.get(key, (now - self.window_s, 0))
            if now - last < self.window_s:
                self._seen[key] = (last, cut + 1)
                return False
            if len(self._seen) > 1000:          # message templates, not messages: a few dozen at most
                self._seen.clear()
            self._seen[key] = (now, 0)
        if cut:
            record.msg = f"{record.msg} [{cut} more like this in {self.window_s:g} s, not logged]"
        return True


def cut_repeats() -> None:
    """Where a flood of connections logs (asyncio's accept loop, uvicorn's per-request errors)."""
    for name in ("asyncio", "uvicorn.error"):
        logging.getLogger(name).addFilter(RepeatsCut())
