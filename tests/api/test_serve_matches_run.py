"""Issue 2's contract: `gate serve` + `gate submit --wait` on the repository that `gate run` gated give
the same verdict and exit code, and the revision, its job and its metrics are stored, on SQLite and
on PostgreSQL. The real pipeline runs (git, nvcc, the GPU child); with no GPU here that is `incomplete`."""

import json
import shutil
import subprocess
import sys

import httpx
import pytest
from serve_process import free_port, gate_env, start_server
from sqlalchemy import select

from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import Job, Metric, Revision, VerdictRecord
from tests.samples.build import commit_files, make_repo

pytestmark = [pytest.mark.nvcc,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]


def test_serve_and_submit_wait_agree_with_gate_run(tmp_path, database_url):
    repo, shas = make_repo(tmp_path)
    env = gate_env(GATE_DATABASE_URL=database_url, GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_ALLOW_LOCAL_REPOS="1")     # a repository on this disk: gate serve refuses it by default
    run = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), "--sha", shas["base"],
                          "--json"], env=env, capture_output=True, text=True, timeout=600)
    run_verdict = json.loads(run.stdout)["kernels"][0]["verdict"]

    port = free_port()
    with open(tmp_path / "serve.log", "w") as log:
        server = start_server(env, port, log)
        try:
            submit = subprocess.run([sys.executable, "-m", "gate.cli", "submit", "--server", f"http://127.0.0.1:{port}",
                                     "--repo", str(repo), "--sha", shas["base"], "--wait"],
                                    env=env, capture_output=True, text=True, timeout=600)
        finally:
            server.terminate()
            server.wait(30)
    assert (run.returncode, run_verdict) == (3, "incomplete")
    assert submit.returncode == run.returncode, submit.stdout + submit.stderr
    assert "wmma_gemm" in submit.stdout and run_verdict in submit.stdout
    assert f"http://127.0.0.1:{port}/revisions/" in submit.stdout   # the page, not only the API URL

    engine = make_engine(database_url)
    with make_session_factory(engine)() as session:
        (revision,) = session.scalars(select(Revision)).all()
        (job,) = session.scalars(select(Job).where(Job.revision_id == revision.id)).all()
        verdict = session.scalars(select(VerdictRecord).where(VerdictRecord.job_id == job.id)).one()
        names = {m.name for m in session.scalars(select(Metric).where(Metric.job_id == job.id))}
    engine.dispose()
    assert revision.sha == shas["base"] and job.state == "done" and verdict.verdict == run_verdict
    assert {"registers", "spill_bytes", "smem_bytes"} <= names


BAD_MANIFESTS = {
    "unknown key": ("max_bankconflict_pct = 5", "max_bankconflict_pct"),
    "path leaving the repository": ('sources = ["../x.cu", "extension/gemm_binding.cpp"]', "../x.cu"),
    "missing file": ('sources = ["kernels/gone.cu", "extension/gemm_binding.cpp"]', "kernels/gone.cu"),
}


def test_bad_manifests_and_shas_are_refused_by_name_and_the_server_keeps_serving(tmp_path, database_url):
    repo, _ = make_repo(tmp_path)
    good = (repo / "gate.toml").read_text()
    bad_shas = {}
    for label, (line, _named) in BAD_MANIFESTS.items():
        if line.startswith("sources"):
            text = "\n".join(line if row.startswith("sources") else row for row in good.splitlines())
        else:
            text = good.replace("[kernel.gates]\n", f"[kernel.gates]\n{line}\n")
        bad_shas[label] = commit_files(repo, {"gate.toml": text}, f"bad manifest: {label}")
    env = gate_env(GATE_DATABASE_URL=database_url, GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_ALLOW_LOCAL_REPOS="1")     # a repository on this disk: gate serve refuses it by default
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(tmp_path / "serve.log", "w") as log:
        server = start_server(env, port, log)
        try:
            replies = {label: httpx.post(f"{base}/api/v1/revisions", json={"repo": str(repo), "sha": sha}, timeout=60)
                       for label, sha in bad_shas.items()}
            missing = httpx.post(f"{base}/api/v1/revisions", json={"repo": str(repo), "sha": "0" * 40}, timeout=60)
            health = httpx.get(f"{base}/healthz", timeout=10)
        finally:
            server.terminate()
            server.wait(30)
    for label, reply in replies.items():
        assert reply.status_code == 422, (label, reply.text)
        assert BAD_MANIFESTS[label][1] in reply.text and "gate.toml" in reply.text, (label, reply.text)
    assert missing.status_code == 422 and "0" * 40 in missing.text
    assert health.status_code == 200
