"""`gate serve` as a real process: submit a git repo, get a verdict; SIGKILL mid-job, restart, the job
finishes exactly once. The pipeline is swapped through the GATE_TEST_PIPELINE seam; the source
mirror, the manifest loader, the database and the executor are the real ones."""

import signal
import subprocess
import sys
from pathlib import Path

import httpx
from serve_process import free_port, gate_env, start_server, wait_for
from sqlalchemy import func, select

from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import JobEvent, VerdictRecord
GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    (path / "gate.toml").write_text(
        '[[kernel]]\nname = "tiny"\nsources = ["k.cu"]\nworkload = "gemm"\narch = ["sm_80"]\n'
        "shapes = [{m = 64, n = 64, k = 64}]\nprofile = false\n")
    subprocess.run([*GIT, "add", "."], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "first"], cwd=path, check=True)
    (path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 2.0f; }\n")
    subprocess.run([*GIT, "commit", "-qam", "second"], cwd=path, check=True)
    return path


def test_serve_gates_a_repo_and_a_killed_job_finishes_exactly_once(tmp_path):
    repo = _repo(tmp_path / "repo")
    db_url = f"sqlite:///{tmp_path / 'gate.db'}"
    calls, hold = tmp_path / "calls.txt", tmp_path / "hold"
    port = free_port()
    server = f"http://127.0.0.1:{port}"
    env = gate_env(GATE_DATABASE_URL=db_url, GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_ALLOW_LOCAL_REPOS="1",      # the repository is on this disk: gate serve refuses it by default
                   GATE_TEST_PIPELINE="e2e_pipeline:slow_gate_job", GATE_E2E_CALLS=str(calls),
                   GATE_E2E_HOLD=str(hold))

    def serve() -> subprocess.Popen:
        return start_server(env, port, log)

    log = open(tmp_path / "serve.log", "a")   # noqa: SIM115 (both server runs write here)
    proc = serve()
    try:
        # 1. submit --wait follows a revision to its verdict and exits with its code
        submit = subprocess.run([sys.executable, "-m", "gate.cli", "submit", "--server", server, "--repo", str(repo),
                                 "--sha", "HEAD", "--branch", "main", "--wait"], env=env, capture_output=True,
                                text=True, timeout=120)
        assert submit.returncode == 0, submit.stdout + submit.stderr
        assert "tiny" in submit.stdout and "accept" in submit.stdout

        # 2. a job held in the middle; the server is killed; a new one finishes it
        hold.touch()
        reply = httpx.post(f"{server}/api/v1/revisions", json={"repo": str(repo), "sha": "HEAD~1"}).json()
        status_url = reply["status_url"]
        wait_for(lambda: httpx.get(status_url).json()["jobs"][0]["state"] == "running", what="the job to run")
        wait_for(lambda: calls.exists() and len(calls.read_text().splitlines()) == 2, what="the held call")
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        hold.unlink()
        proc = serve()
        body = wait_for(lambda: (b := httpx.get(status_url).json())["status"] == "done" and b, what="the verdict")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        log.close()
    (job,) = body["jobs"]
    assert job["attempts"] == 2 and job["verdict"]["verdict"] == "accept"
    (requeued,) = [e["detail"] for e in job["events"] if e["state"] == "requeued"]
    assert requeued.endswith("its worker is gone")       # the killed server's process, on this host
    assert len(calls.read_text().splitlines()) == 3   # first revision once, the killed job twice
    engine = make_engine(db_url)
    with make_session_factory(engine)() as s:
        assert s.scalar(select(func.count()).select_from(VerdictRecord).where(VerdictRecord.job_id == job["id"])) == 1
        assert s.scalar(select(func.count()).select_from(JobEvent).where(JobEvent.state == "done",
                                                                         JobEvent.job_id == job["id"])) == 1
    engine.dispose()
