"""Planning is fair (issue 44: 68 submissions of repositories whose host accepts and never answers
filled the planner's 4 workers and 64 queue slots; every other submission and webhook got 503 until
git gave up on them, about 85 minutes at the 300 s timeout).

68 silent remotes on 17 loopback addresses (4 repositories each; GATE_ALLOW_PRIVATE_HOSTS lets the
gate fetch from them) are submitted, then a repository the gate already mirrors: it is planned within
10 s, and no host holds more than its 2 fetches. Why 10 s holds on a busy machine: the mirrored
repository waits for no fetch (one worker is kept for such repositories, and its commit is in the
mirror), so its planning costs what an unloaded one does, measured first in the same test."""

from __future__ import annotations

import time
from contextlib import ExitStack

from gate.services.planner import PER_HOST
from tests.api.serve_process import wait_for
from tests.security.conftest import GATE_TOML, make_repo
from tests.security.silent_remote import SilentRemote
from tests.security.test_silent_remotes import FETCH_SETTINGS

HOSTS, REPOS_PER_HOST = 17, 4
PLANNED_S = 10.0


def _planned_after(server, repo: str, sha: str) -> float:  # noqa: ANN001
    """Seconds from submitting `repo` at `sha` to its revision having its jobs (a local path's plan
    is awaited by the submission itself, up to 10 s)."""
    started = time.monotonic()
    reply = server.submit(repo, sha, timeout=30)
    assert reply.status_code == 202, reply.text
    wait_for(lambda: server.revision(reply.json()["id"])["jobs"], 30, what="the mirrored repository's jobs")
    return time.monotonic() - started


def test_sixty_eight_stalled_remotes_leave_a_mirrored_repository_planned_within_ten_seconds(make_server, tmp_path):
    sha = make_repo(tmp_path / "known", {"gate.toml": GATE_TOML, "attn.cu": "// v1\n"})
    server = make_server(**FETCH_SETTINGS, GATE_ALLOW_LOCAL_REPOS="1").start()
    unloaded = _planned_after(server, str(tmp_path / "known"), sha)      # also mirrors it
    with ExitStack() as stack:
        remotes = [stack.enter_context(SilentRemote(f"127.0.0.{2 + i}")) for i in range(HOSTS)]
        codes = [server.submit(remote.url(f"r{j}"), "main").status_code
                 for j in range(REPOS_PER_HOST) for remote in remotes]
        assert set(codes) <= {202, 503} and codes.count(202) >= 64, codes
        wait_for(lambda: sum(len(r.held) for r in remotes) >= 3, 30, what="the strangers' fetches to stall")

        took = _planned_after(server, str(tmp_path / "known"), sha)
        assert took < PLANNED_S, took
        held = [len(remote.held) for remote in remotes]
        assert max(held) <= PER_HOST and sum(held) <= 3, held       # strangers hold all workers but one
        assert server.timed_get("/healthz") < 1.0
    print(f"unloaded plan {unloaded:.2f} s; behind 68 stalled remotes {took:.2f} s; accepted "
          f"{codes.count(202)}, refused {codes.count(503)}; fetches held per host {held}")
    server.stop()
