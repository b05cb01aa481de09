"""`gate.api.connections`: repeated errors are logged once per window with a count of those left
out, and the connection cap never asks for more descriptors than the process may open."""

from __future__ import annotations

import logging
import resource

from gate.api import connections
from gate.api.connections import BACKLOG, FD_RESERVE, RepeatsCut, descriptor_cap


def _record(msg: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("asyncio", level, __file__, 1, msg, None, None)


def test_a_repeated_error_is_let_through_once_per_window_and_then_says_how_many_were_cut(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(connections.time, "monotonic", lambda: now[0])
    cut = RepeatsCut(window_s=10)
    first = _record("socket.accept() out of system resource")
    assert cut.filter(first) and first.msg == "socket.accept() out of system resource"
    assert not any(cut.filter(_record("socket.accept() out of system resource")) for _ in range(1000))
    assert cut.filter(_record("another error"))                     # another message is its own
    assert cut.filter(_record("a warning", logging.INFO))           # below WARNING: never cut
    now[0] += 10
    later = _record("socket.accept() out of system resource")
    assert cut.filter(later) and "[1000 more like this in 10 s, not logged]" in later.msg


def test_the_cap_leaves_room_for_the_reserve_and_one_accept_batch(monkeypatch):
    limits = {"soft": 1024, "hard": 3000}
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (limits["soft"], limits["hard"]))
    monkeypatch.setattr(resource, "setrlimit", lambda _kind, value: limits.update(soft=value[0]))
    assert descriptor_cap(1024) == 3000 - FD_RESERVE - BACKLOG and limits["soft"] == 3000   # soft raised to hard
    assert descriptor_cap(100) == 100
    limits.update(soft=65536, hard=65536)
    assert descriptor_cap(1024) == 1024
