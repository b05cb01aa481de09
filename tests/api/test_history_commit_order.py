"""Issue 45: `gate serve` draws a kernel's history in the repository's commit order, whatever order
its commits were submitted in. A real git repository, the real server, mirror, planner, database and
executor; only the pipeline is a stand-in (GATE_TEST_PIPELINE) that times each commit at a latency
of its own, so the order can be read off the values."""

import json
import subprocess
from pathlib import Path

import httpx
from serve_process import free_port, gate_env, start_server, wait_for

GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
LATENCY_US = (29.0, 30.0, 40.0, 24.0)      # main's commits, oldest first: what the issue saw
MANIFEST = ('[[kernel]]\nname = "tiny"\nsources = ["k.cu"]\nworkload = "gemm"\narch = ["sm_80"]\n'
            "shapes = [{m = 64, n = 64, k = 64}]\nprofile = false\n")


def _commit(repo: Path, message: str, body: str, date: str) -> str:
    """A commit of `body` as k.cu dated `date`: the dates run backwards (a rebase may leave them so),
    so neither commit time nor submission order gives the history's order, only the graph does."""
    (repo / "k.cu").write_text(body)
    subprocess.run([*GIT, "add", "."], cwd=repo, check=True)
    env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date, "PATH": "/usr/bin:/bin"}
    subprocess.run([*GIT, "commit", "-qm", message], cwd=repo, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo(path: Path) -> tuple[list[str], str]:
    """main: four commits (dated newest first); feature: one commit off main's second."""
    path.mkdir()
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "gate.toml").write_text(MANIFEST)
    main = [_commit(path, f"c{i}", f"__global__ void k(float *x) {{ x[0] = {i}.0f; }}\n",
                    f"2025-01-{20 - i:02d}T12:00:00+00:00") for i in range(4)]
    subprocess.run([*GIT, "checkout", "-q", "-b", "feature", main[1]], cwd=path, check=True)
    feature = _commit(path, "f", "__global__ void k(float *x) { x[0] = 9.0f; }\n", "2025-01-25T12:00:00+00:00")
    subprocess.run([*GIT, "checkout", "-q", "main"], cwd=path, check=True)
    return main, feature


def _gate(server: str, repo: Path, sha: str, branch: str) -> None:
    reply = httpx.post(f"{server}/api/v1/revisions", json={"repo": str(repo), "sha": sha, "branch": branch})
    assert reply.status_code in (200, 201, 202), reply.text
    url = reply.json()["status_url"]
    wait_for(lambda: httpx.get(url).json()["status"] == "done", what=f"the verdict of {sha[:8]}")


def _history(server: str) -> dict:
    (series,) = httpx.get(f"{server}/api/v1/kernels/tiny/history",
                          params={"metric": "latency_median_us"}).json()["series"]
    return series


def test_history_is_drawn_in_commit_order_when_head_is_submitted_first(tmp_path):
    repo = tmp_path / "repo"
    main, feature = _repo(repo)
    latency = {**dict(zip(main, LATENCY_US)), feature: 99.0}
    (tmp_path / "latency.json").write_text(json.dumps(latency))
    port = free_port()
    server = f"http://127.0.0.1:{port}"
    env = gate_env(GATE_DATABASE_URL=f"sqlite:///{tmp_path / 'gate.db'}", GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_ALLOW_LOCAL_REPOS="1", GATE_TEST_PIPELINE="e2e_pipeline:commit_timed_gate_job",
                   GATE_E2E_LATENCY=str(tmp_path / "latency.json"))
    with open(tmp_path / "serve.log", "w") as log:
        proc = start_server(env, port, log)
        try:
            seen = []
            for sha in (main[3], main[2], main[0], main[1]):    # HEAD first, then its ancestors, one out of order
                _gate(server, repo, sha, "main")
                seen.append([p["sha"] for p in _history(server)["points"]])   # the server's cache, read between verdicts
            _gate(server, repo, feature, "feature")
            series = _history(server)
        finally:
            proc.kill()
            proc.wait(10)
    # Each ancestor that landed late was put in its place among the ones already read.
    assert seen == [[main[3]], [main[2], main[3]], [main[0], main[2], main[3]], main]
    assert [p["sha"] for p in series["points"]] == main
    assert [p["value"] for p in series["points"]] == list(LATENCY_US)
    assert [p["x"] for p in series["points"]] == [0, 1, 2, 3]
    # The feature branch's commit is apart, not on the line nor in its change points: drawn beside
    # main's commit of its first-parent depth (3: c0, c1, f), the third.
    assert [(p["sha"], p["value"], p["x"]) for p in series["off_branch"]] == [(feature, 99.0, 2)]
