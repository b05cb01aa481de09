"""Bodies read before their sender is known have a deadline and a minimum rate (issue 44: two
connections that declared 16 MiB and then sent nothing held the whole unauthenticated-body budget,
and every valid signed webhook got 503 for the 190 s they were held, 13 of 13).

The bound kept: while one silent and one trickling 16 MiB sender are connected, every signed ping
is answered 2xx within 5 s, and both senders lose their connection (408) within seconds. Why 5 s
holds on a busy machine: a ping costs the server one small body and an HMAC (the unloaded ping
measured first takes milliseconds); the slow senders hold no worker and, their bytes counted as
they arrive, almost none of the budget, so a ping waits for nothing they do."""

from __future__ import annotations

import json
import time

from gate.api.body_limit import GRACE_S
from tests.api.github_app_server import signed
from tests.security.conftest import SECRET
from tests.security.raw_http import SlowSender

WEBHOOK = "/api/v1/webhooks/github"
DECLARED = 16 << 20
PING_BOUND_S = 5.0
LOSES_SHARE_S = GRACE_S + 10       # the deadline, plus room for a loaded machine to notice it


def _ping(server, n: int) -> float:  # noqa: ANN001
    body = json.dumps({"zen": "Keep it logically awesome.", "hook_id": n}).encode()
    headers = {"X-GitHub-Event": "ping", "X-GitHub-Delivery": f"ping-{n}", "Content-Type": "application/json",
               "X-Hub-Signature-256": signed(body, SECRET)}
    started = time.monotonic()
    reply = server.request("POST", WEBHOOK, content=body, headers=headers, timeout=PING_BOUND_S)
    took = time.monotonic() - started
    assert reply.status_code == 200 and reply.json()["status"] == "pong", (n, reply.status_code, reply.text)
    return took


def test_two_slow_16_mib_senders_never_turn_a_signed_ping_away(make_server):
    server = make_server(GATE_GITHUB_WEBHOOK_SECRET=SECRET).start()
    baseline = _ping(server, 0)
    hold = {"X-GitHub-Event": "push", "Content-Type": "application/json",
            "X-Hub-Signature-256": "sha256=" + "0" * 64}       # read before its HMAC can be checked
    silent = SlowSender(server.port, WEBHOOK, {**hold, "X-GitHub-Delivery": "silent"}, DECLARED)
    trickling = SlowSender(server.port, WEBHOOK, {**hold, "X-GitHub-Delivery": "trickle"}, DECLARED, trickle=1)

    took, n = [], 1
    deadline = time.monotonic() + LOSES_SHARE_S + 2
    while time.monotonic() < deadline:           # pings before, while and after the senders are cut off
        took.append(_ping(server, n))
        n += 1
        time.sleep(0.3)
    silent.join(5)
    trickling.join(5)

    assert max(took) < PING_BOUND_S, took
    for sender in (silent, trickling):
        assert sender.status == 408, sender.status
        assert sender.answered_after_s < LOSES_SHARE_S, sender.answered_after_s
    assert server.timed_get("/healthz") < 1.0
    print(f"{len(took)} pings: unloaded {baseline * 1000:.0f} ms, worst while held {max(took) * 1000:.0f} ms; "
          f"silent sender cut at {silent.answered_after_s:.1f} s, trickling at {trickling.answered_after_s:.1f} s")
    server.stop()


def test_a_body_no_route_reads_is_not_drained_after_the_answer(make_server):
    """A trickled body on a route that reads none (a cancel of no revision: 404) held its connection
    for as long as it trickled, past the answer: the body deadline never saw it."""
    server = make_server().start()
    unread = SlowSender(server.port, "/api/v1/revisions/999/cancel", {}, DECLARED, trickle=1)
    unread.join(LOSES_SHARE_S)
    assert unread.status == 404 and unread.answered_after_s < LOSES_SHARE_S, (unread.status, unread.answered_after_s)
    assert unread.closed_after_s is not None and unread.closed_after_s < LOSES_SHARE_S, unread.closed_after_s
    server.stop()
