"""Child output the artifact store must keep side by side (issue 44: one base name in two folders,
`sub/result.json` beside the result the gate writes, or two 249-character names ended the job
`error` with `FileExistsError` or `File name too long`, and left copies without rows). A real
`gate serve` runs the real `gate_job` with a child that writes them (GATE_TEST_PIPELINE)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.security.conftest import GATE_TOML, make_repo
from tests.security.hostile_child import CROWDED

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                                reason="bubblewrap is not installed (apt install bubblewrap)")


def test_same_names_in_two_folders_and_long_names_are_all_kept_with_rows(make_server, tmp_path):
    sha = make_repo(tmp_path / "repo", {"gate.toml": GATE_TOML, "attn.cu": "// v1\n"})
    server = make_server(GATE_TEST_PIPELINE="security.hostile_child:crowded_gate_job", GATE_ALLOW_LOCAL_REPOS="1").start()
    reply = server.submit(str(tmp_path / "repo"), sha, timeout=30)
    assert reply.status_code == 202, reply.text
    (job,) = server.wait_done(reply.json()["id"], timeout_s=120)["jobs"]
    assert job["verdict"]["verdict"] != "error" and not job["error"], job["verdict"]
    served = sorted(server.request("GET", a["url"].removeprefix(server.url)).text for a in job["artifacts"])
    kept = [text for name, text in CROWDED.items() if name.endswith((".ncu-rep", "ptxas.log", "result.json"))]
    assert set(kept) <= set(served), served                 # every copy came back, each under its own name
    stored = {Path(a["path"]).name for a in job["artifacts"]}
    on_disk = {p.name for p in (server.data_dir / "artifacts" / str(job["id"])).iterdir()}
    assert on_disk == stored and all(len(name.encode()) <= 255 for name in on_disk), (on_disk, stored)
    server.stop()
