"""A measured outcome through the real service: stored, announced, its Check Run sent over HTTP to the
GitHub stand-in, its revision page served over HTTP.

What gets measured is the only thing replaced: `Replay` is the `gate_job` and hands back an outcome
measured earlier (by `gate run` on the GPU, so the device runs each job once, or built by a CPU
test). Everything after it is the service's own: the signed `pull_request` webhook plans the job,
the local executor stores the verdict and its notice, the notifier composed from the settings makes
the Check Run, the outbox sweeper sends it with a GitHub App token, and uvicorn serves the page.

    served(outcome, pr, kernel, data_dir)   -> Served(check_run, page, revision_id)
    named_in_check_run(summary)             -> the lines under "Where it got slower", as sent
    hot_rows(page)                          -> `file:line` of the source view's highlighted rows
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from gate.config import Settings
from gate.domain.job import JobOrder
from gate.storage.db import make_engine
from gate.storage.schema import upgrade
from tests.api.github_app_server import SECRET, PullRequestRepo, post_event, pull_request_payload, serve
from tests.fakes.github_server import FakeGitHub, make_app_key
from tests.service_fakes import FakeSources

PUBLIC_URL = "http://gate.test"
APP_ID = "99"


@dataclass
class Replay:
    """A `gate_job` that hands back `outcome`, measured earlier, for the kernel it was measured for."""

    outcome: Any                     # `GateOutcome` (or the tests' `FakeOutcome`)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, order: JobOrder, _context: Any) -> Any:
        self.calls.append({"sha": order.sha, "base_sha": order.base_sha, "kernel": order.kernel})
        if order.kernel != self.outcome.result.kernel:
            raise AssertionError(f"asked for {order.kernel}, replaying {self.outcome.result.kernel}")
        return self.outcome


@dataclass
class Served:
    check_run: dict[str, Any]        # the completing PATCH's body, as the stand-in received it
    page: str                        # GET /revisions/<id>, HTML
    revision_id: int


@dataclass
class NamedLine:
    where: str                       # `file:line`, or `+0x0270 LDS R19, [R17]` without line information
    kernel: str
    gains: str                       # "+20.0 pt stall samples, +90,000 bank-conflict wavefronts"
    text: str                        # the source line ("" for an instruction)


def sqlite_url(folder: Path) -> str:
    """A SQLite database in `folder`, migrated to head (the GPU tests have no PostgreSQL)."""
    url = f"sqlite:///{folder / 'gate.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


def served(outcome: Any, pr: PullRequestRepo, *, data_dir: Path, database_url: str | None = None) -> Served:
    """Open pull request `pr` on the service (GitHub App configured against the stand-in), let
    `outcome` be what its one job measured, and return the Check Run GitHub received and the page."""
    data_dir.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = make_app_key()
    kernel = outcome.result.kernel
    sources = FakeSources(kernels=(kernel,), refs={sha: sha for sha in (pr.first, pr.main_tip, pr.head)})
    with FakeGitHub(token="unused", app_id=APP_ID, app_public_key_pem=public_pem) as github:
        settings = Settings(database_url=database_url or sqlite_url(data_dir), data_dir=data_dir,
                            github_webhook_secret=SECRET, github_api_url=github.url, public_url=PUBLIC_URL,
                            github_token=None, github_app_id=APP_ID, github_app_private_key=private_pem)
        replay = Replay(outcome)
        with serve(settings, gate_job=replay, sources=sources) as url:
            reply = post_event(url, "pull_request", pull_request_payload(pr))
            assert reply.status_code == 202, reply.text
            revision_id = reply.json()["revision_id"]
            github.wait_for(lambda: github.accepted("PATCH", r"/check-runs/\d+$"), timeout_s=120)
            page = httpx.get(f"{url}/revisions/{revision_id}", timeout=60)
        assert page.status_code == 200, page.text[:2000]
        assert github.problems == [], github.problems
        (complete,) = github.accepted("PATCH", r"^/repos/octo/flashcore/check-runs/\d+$")
    assert replay.calls == [{"sha": pr.head, "base_sha": pr.first, "kernel": kernel}], replay.calls
    return Served(complete.body, page.text, revision_id)


_ENTRY = re.compile(r"^- `(?P<place>[^`]+)` in `(?P<kernel>[^`]+)`: (?P<gains>.*)$")
_MOVED = re.compile(r" \(line \d+ in the baseline\)$")


def named_in_check_run(summary: str) -> list[NamedLine]:
    """The entries of the summary's "Where it got slower" section ([] without one), read back from
    the Markdown GitHub was sent: the place each names, its kernel, gains and source text."""
    head, found, section = summary.partition("### Where it got slower")
    if not found:
        return []
    named: list[NamedLine] = []
    for row in section.split("\n")[1:]:
        if row.startswith("### ") or row.startswith("[Full results"):
            break
        if m := _ENTRY.match(row):
            named.append(NamedLine(_MOVED.sub("", m["place"]), m["kernel"], m["gains"], ""))
        elif named and row.startswith("  `") and row.endswith("`"):
            named[-1].text = row[3:-1]
    return named


def hot_rows(page: str) -> list[str]:
    """`file:line` of every highlighted row of the page's source views."""
    return re.findall(r'<tr class="hot"[^>]*><td><code>([^<]+)</code>', page)
