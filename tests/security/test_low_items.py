"""The low items of issue 24, each against a real `gate serve`: a signed webhook replayed under a new
delivery id reran the commit; a lone surrogate in JSON, a NUL in `/revisions/{ref}` (PostgreSQL)
and a deeply nested signed webhook were 500s; a `<a href>` in a commit message became a live link
in chart hovers. On PostgreSQL, where the NUL was a 500. A build log, which names the job's
folder, is served with the data folder written `<data>`."""

from __future__ import annotations

import json
import re

import pytest

from tests.api.github_app_server import signed
from tests.security.conftest import GATE_TOML, SECRET, make_repo

EVIL = '<a href="https://evil.example/x">release notes</a>'
WEBHOOK = "/api/v1/webhooks/github"


def _webhook(server, payload: bytes, delivery: str, event: str = "push"):  # noqa: ANN001, ANN202
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery, "Content-Type": "application/json",
               "X-Hub-Signature-256": signed(payload, SECRET)}
    return server.request("POST", WEBHOOK, content=payload, headers=headers)


def _push(clone_url: str, sha: str) -> bytes:
    return json.dumps({"ref": "refs/heads/main", "after": sha, "repository": {
        "full_name": "octo/flashcore", "clone_url": clone_url, "default_branch": "main"}}).encode()


@pytest.mark.parametrize("database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_replays_surrogates_nuls_nesting_and_hover_links(make_server, tmp_path, database_url):
    repo = tmp_path / "repo"
    sha = make_repo(repo, {"gate.toml": GATE_TOML, "attn.cu": "// v1\n"}, message=f"faster softmax {EVIL}")
    server = make_server(GATE_DATABASE_URL=database_url, GATE_GITHUB_WEBHOOK_SECRET=SECRET,
                         GATE_ALLOW_LOCAL_REPOS="1").start()

    # A judged commit replayed under a new delivery id is not gated again.
    first = _webhook(server, _push(repo.as_uri(), sha), "delivery-1")
    assert first.status_code == 202, first.text
    revision_id = first.json()["revision_id"]
    judged = server.wait_done(revision_id)["jobs"][0]
    assert judged["verdict"]["verdict"] == "accept"
    build_log = next(a for a in judged["artifacts"] if a["kind"] == "build_log")
    log = server.request("GET", build_log["url"].removeprefix(server.url))
    assert log.status_code == 200 and "nvcc -c <data>/" in log.text, log.text      # the job's folder, hidden
    replay = _webhook(server, _push(repo.as_uri(), sha), "delivery-2")
    assert replay.status_code == 200 and replay.json() == {**replay.json(), "status": "duplicate",
                                                          "revision_id": revision_id}, replay.text
    assert server.request("GET", f"/api/v1/revisions/{revision_id + 1}").status_code == 404

    # A lone surrogate, in the API and in a signed webhook: 4xx, never a 500.
    lone = b'{"repo": "https://github.com/acme/k\\ud800", "sha": "main"}'
    api = server.request("POST", "/api/v1/revisions", content=lone, headers={"Content-Type": "application/json"})
    assert api.status_code == 422, api.text
    hooked = _webhook(server, _push("https://github.com/acme/k\\ud800", sha).replace(b"\\\\ud800", b"\\ud800"),
                      "delivery-3")
    assert 400 <= hooked.status_code < 500, hooked.text

    # A NUL in a revision reference (PostgreSQL refuses it even in a comparison).
    for ref in ("ab%00cd", "%00", "main%00"):
        reply = server.request("GET", f"/revisions/{ref}")
        assert 400 <= reply.status_code < 500, (ref, reply.status_code)

    # A signed webhook nested 100k levels deep.
    nested = b"[" * 100_000 + b"]" * 100_000
    deep = _webhook(server, nested, "delivery-4")
    assert deep.status_code == 400 and "nested too deeply" in deep.text, deep.text

    # The commit message's link reaches the kernel page's hovers as text.
    page = server.request("GET", "/kernels/attn")
    assert page.status_code == 200 and '<a href="https://evil' not in page.text
    table = re.search(r'<script type="application/json" id="revision-table">(.*?)</script>', page.text, re.S)
    hovers = [row[2] for row in json.loads(table.group(1)).values()]      # [sha, date, message]
    assert any("&lt;a href=" in message and "<a" not in message for message in hovers), hovers

    server.timed_get("/healthz")                   # answers, promptly (conftest: `Server.prompt`)
    server.assert_no_server_paths()
    server.stop()
