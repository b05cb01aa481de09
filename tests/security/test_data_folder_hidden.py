"""Every box hides the server's data folder and its own configuration wherever they lie (issue 44:
with the data folder under a `PYTHONPATH` entry, which the box binds read-only, a submitted `.cu`
that `#include`d them printed the SQLite database, another job's logs and a mirror's config into
the public compile log).

A real `gate serve` with the real pipeline (the static stage's nvcc runs in the GPU child's box)
keeps its data folder under an import path entry, its SQLite database and the GitHub App's private
key file beside it, outside the data folder but under that entry. The submitted kernel includes
each by absolute path; no answer, page, artifact or stored result shows a byte of any of them."""

from __future__ import annotations

import os
import shutil

import httpx
import pytest

from tests.api.serve_process import free_port, gate_env, start_server, wait_for
from tests.security.conftest import make_repo

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or shutil.which("nvcc") is None
                                or os.environ.get("GATE_BOX") == "off",
                                reason="needs bubblewrap and nvcc (the box and the static stage's compile)")

CANARY = "canary-7d1e0c"
MANIFEST = ('[[kernel]]\nname = "attn"\nsources = ["attn.cu"]\nworkload = "gemm"\narch = ["sm_80"]\n'
            "shapes = [{m = 64, n = 64, k = 64}]\nprofile = false\n")


def test_a_kernel_including_the_database_and_the_key_by_absolute_path_reads_nothing(tmp_path):
    site = tmp_path / "site"               # an import path entry: the box binds it read-only
    data, database, key = site / "data", site / "gate.db", site / "app.pem"
    (data / "jobs").mkdir(parents=True)
    (data / "notes.txt").write_text(f"{CANARY} in the data folder\n")
    key.write_text(f"-----BEGIN RSA PRIVATE KEY-----\n{CANARY}-key\n-----END RSA PRIVATE KEY-----\n")
    includes = [data / "notes.txt", database, key]
    # Each file is included only where the preprocessor finds it, so that one hidden file does not
    # stop the compile before the next is tried; the compile then fails on purpose, keeping its log.
    kernel = "".join(f'#if __has_include("{path}")\n#include "{path}"\n#else\n#warning hidden: {i}\n#endif\n'
                     for i, path in enumerate(includes)) + "#error every include was tried\n"
    sha = make_repo(tmp_path / "repo", {"gate.toml": MANIFEST, "attn.cu": kernel})
    env = gate_env(GATE_DATA_DIR=str(data), GATE_DATABASE_URL=f"sqlite:///{database}", GATE_ALLOW_LOCAL_REPOS="1",
                   GATE_GITHUB_APP_PRIVATE_KEY=str(key), GATE_WARM_HISTORY="0")
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(site)])
    port = free_port()
    with open(tmp_path / "serve.log", "w") as log:
        proc = start_server(env, port, log)
        try:
            texts = _everything_served(f"http://127.0.0.1:{port}", str(tmp_path / "repo"), sha)
        finally:
            proc.terminate()
            proc.wait(20)
    everything = "\n".join(texts)
    assert "every include was tried" in everything, everything[:3000]          # the compile ran, its log kept
    assert CANARY not in everything and "SQLite format 3" not in everything
    assert "hidden: 0" in everything        # the data folder is an empty one; the files read as empty


def _everything_served(server: str, repo: str, sha: str) -> list[str]:
    """The revision's JSON, its page and every artifact it lists, once the revision is done."""
    reply = httpx.post(f"{server}/api/v1/revisions", json={"repo": repo, "sha": sha}, timeout=30)
    assert reply.status_code == 202, reply.text
    status_url = reply.json()["status_url"]
    body = wait_for(lambda: (b := httpx.get(status_url, timeout=10).json())["status"] == "done" and b,
                    timeout_s=180, what="the verdict")
    texts = [httpx.get(status_url, timeout=10).text,
             httpx.get(f"{server}/revisions/{body['id']}", timeout=10).text]
    for job in body["jobs"]:
        texts += [httpx.get(a["url"], timeout=10).content.decode(errors="replace") for a in job["artifacts"]]
    return texts
