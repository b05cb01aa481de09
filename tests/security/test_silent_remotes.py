"""Planning and fetches run on their own bounded workers (issue 24: 45 silent git remotes left
`/healthz` unanswered for 174 s, and after a restart the leftovers were re-planned one by one,
over 6 minutes without HTTP). Loopback remotes need GATE_ALLOW_PRIVATE_HOSTS and http in
GATE_ALLOWED_SCHEMES: set here, the defaults refuse both."""

from __future__ import annotations

import time

from gate.services.planner import PER_HOST
from tests.api.serve_process import wait_for
from tests.security.silent_remote import SilentRemote

REMOTES = 50
GIT_TIMEOUT_S = 300             # how long a silent remote holds a fetch: what a starved server would wait
FETCH_SETTINGS = {"GATE_ALLOW_PRIVATE_HOSTS": "1", "GATE_ALLOWED_SCHEMES": "https,ssh,http",
                  "GATE_GIT_TIMEOUT_S": str(GIT_TIMEOUT_S)}


def _answers_fast(server) -> None:  # noqa: ANN001
    for path in ("/healthz", "/", "/api/v1/kernels"):
        for _ in range(3):
            server.timed_get(path)                   # asserts the answer prompt (conftest: `Server.prompt`)


def test_fifty_silent_remotes_leave_health_and_pages_answering_also_across_a_restart(make_server):
    with SilentRemote() as remote:
        server = make_server(**FETCH_SETTINGS).start()
        for i in range(REMOTES):
            started = time.monotonic()
            reply = server.submit(remote.url(f"r{i}"), "main")
            assert reply.status_code == 202, reply.text
            server.prompt(time.monotonic() - started, f"submission {i}")
        # One host's fetches run at most PER_HOST at once (issue 44), the others wait queued.
        wait_for(lambda: len(remote.held) >= PER_HOST, what="the planner's git fetches to reach the silent remote")
        _answers_fast(server)
        assert server.revision(REMOTES)["status"] == "queued"       # still pending: nothing was dropped

        server.stop()
        held_before = len(remote.held)
        started = time.monotonic()
        server.start()                       # returns once /healthz answers
        assert time.monotonic() - started < GIT_TIMEOUT_S, "start-up waited for the leftovers"
        wait_for(lambda: len(remote.held) >= held_before + PER_HOST, what="the leftovers to be re-planned")
        _answers_fast(server)
        server.stop()


def test_a_full_planning_queue_answers_503_with_retry_after(make_server):
    with SilentRemote() as remote:
        server = make_server(**FETCH_SETTINGS, GATE_PLANNER_WORKERS="1", GATE_PLANNER_QUEUE="2").start()
        codes = []
        for i in range(6):
            reply = server.submit(remote.url(f"q{i}"), "main")
            codes.append(reply.status_code)
            if reply.status_code == 503:
                assert int(reply.headers["retry-after"]) > 0 and "GATE_PLANNER_QUEUE" in reply.text
                break
        assert codes[-1] == 503 and codes.count(202) <= 3, codes       # one planning, two waiting
        server.timed_get("/healthz")
        server.stop()
