"""Authentication before bodies (issue 24: 25 MiB bodies were read before any check; 100
concurrent unsigned webhooks cost the server +2.2 GB).

Bound stated and kept: with the default GATE_UNAUTHENTICATED_BODY_BYTES (32 MiB) the server's peak
resident memory (VmHWM) grows by less than 160 MiB while 100 clients each send a 20 MiB webhook
with a signature header that cannot match; a webhook without the header, or a write without the
token, is refused before its body is read."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from tests.security.conftest import SECRET, TOKEN
from tests.security.raw_http import post_body

CLIENTS = 100
BODY = 20 << 20
PEAK_GROWTH_KIB = 160 << 10
WEBHOOK = "/api/v1/webhooks/github"


def _flood(port: int, path: str, headers: dict[str, str]) -> list[int]:
    with ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(lambda i: post_body(port, path, {**headers, "X-GitHub-Delivery": f"flood-{i}"},
                                                 BODY), range(CLIENTS)))


def test_a_hundred_big_unsigned_webhooks_keep_the_server_within_its_budget(make_server):
    server = make_server(GATE_GITHUB_WEBHOOK_SECRET=SECRET, GATE_API_TOKEN=TOKEN).start()
    server.timed_get("/healthz")
    before = server.memory_kib("VmRSS")

    started = time.monotonic()
    event = {"X-GitHub-Event": "push", "Content-Type": "application/json"}
    unsigned = _flood(server.port, WEBHOOK, event)
    assert set(unsigned) == {401}, unsigned                     # no header: refused unread
    signed_badly = _flood(server.port, WEBHOOK, {**event, "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert set(signed_badly) <= {401, 503} and 401 in signed_badly and 503 in signed_badly, signed_badly
    no_token = _flood(server.port, "/api/v1/revisions", {"Content-Type": "application/json"})
    assert set(no_token) == {401}, no_token

    growth = server.memory_kib("VmHWM") - before
    assert growth < PEAK_GROWTH_KIB, f"peak RSS grew {growth >> 10} MiB (bound {PEAK_GROWTH_KIB >> 10} MiB)"
    server.timed_get("/healthz")                   # answers, promptly (conftest: `Server.prompt`)
    print(f"{time.monotonic() - started:.1f} s; server peak RSS growth: {growth >> 10} MiB; signed-badly answers: "
          f"{signed_badly.count(401)} read and refused, {signed_badly.count(503)} refused unread")
    server.stop()
