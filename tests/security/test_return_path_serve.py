"""Issue 24 against a real `gate serve`: a GPU child links its artifacts to a host file, to the
server's SQLite database and to /proc/self/environ (the server's tokens); every artifact URL the
server lists is fetched, and none serves any of them. The pipeline is the real `gate_job` with the
child's command swapped (GATE_TEST_PIPELINE=security.hostile_child:hostile_gate_job)."""

from __future__ import annotations

import json
import os
import shutil

import httpx
import pytest

from tests.api.serve_process import free_port, gate_env, start_server, wait_for
from tests.security.hostile_child import HONEST_LOG, TARGETS_ENV
from tests.security.test_return_path import CANARY, make_repo, secrets

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                                reason="bubblewrap is not installed (apt install bubblewrap)")


def test_served_artifacts_never_hold_what_a_childs_link_points_at(tmp_path):
    repo = make_repo(tmp_path / "repo")
    db = tmp_path / "gate.db"
    targets = {**secrets(tmp_path), "database": str(db), "big_bytes": 0}
    port = free_port()
    server = f"http://127.0.0.1:{port}"
    env = gate_env(GATE_DATABASE_URL=f"sqlite:///{db}", GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_TEST_PIPELINE="security.hostile_child:hostile_gate_job",
                   GATE_ALLOW_LOCAL_REPOS="1",      # it submits a repository on this disk
                   GATE_GITHUB_TOKEN=f"ghp-{CANARY}", GATE_GITHUB_WEBHOOK_SECRET=f"hook-{CANARY}",
                   **{TARGETS_ENV: json.dumps(targets)})
    with open(tmp_path / "serve.log", "w") as log:
        proc = start_server(env, port, log)
        try:
            reply = httpx.post(f"{server}/api/v1/revisions", json={"repo": str(repo), "sha": "HEAD"}, timeout=30)
            assert reply.status_code == 202, reply.text
            status_url = reply.json()["status_url"]
            body = wait_for(lambda: (b := httpx.get(status_url, timeout=10).json())["status"] == "done" and b,
                            timeout_s=120, what="the verdict")
            (job,) = body["jobs"]
            assert job["verdict"]["verdict"]                                 # the job ended with a verdict
            served = {a["kind"]: httpx.get(a["url"], timeout=10) for a in job["artifacts"]}
            assert httpx.get(f"{server}/healthz", timeout=5).status_code == 200
        finally:
            proc.kill()
            proc.wait(10)
    assert served["ptxas_log"].text == HONEST_LOG                          # the honest file came back
    for kind, response in served.items():
        assert response.status_code == 200, kind
        assert CANARY.encode() not in response.content, kind
        assert b"SQLite format 3" not in response.content, kind
    assert set(served) <= {"ptxas_log", "request_json", "result_json", "result"}
    refused = [e["detail"] for e in job["events"] if e["state"].endswith("refused")]
    assert any("x.ncu-rep: a symbolic link" in line for line in refused)
    assert any("build.log: a symbolic link" in line for line in refused)
    assert any("ptxas.log: a symbolic link" in line for line in refused)
    # The job's working folder (checkouts, box folder, copies) is gone; the store keeps the artifacts.
    assert not list((tmp_path / "data" / "jobs").glob("*/*"))

