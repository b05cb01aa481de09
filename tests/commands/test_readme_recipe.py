"""The README's recipe "My own repository's history on my machine", run as written: its `gate serve`
line and its submit loop, against a small repository of three commits (a kernel and a gate.toml).
Without a GPU each commit ends `incomplete`, and the kernel's history holds the figures the compile
gives (registers), one point per commit, in commit order.

What the test changes in the block is what a reader changes: the repository's path, and the port
(a free one, so that the test never meets another server on 8000)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.gate_env import gate_env

README = Path(__file__).resolve().parents[2] / "README.md"
GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
MANIFEST = ('[[kernel]]\nname = "tiny"\nsources = ["k.cu"]\nworkload = "gemm"\narch = ["sm_80"]\n'
            "shapes = [{m = 64, n = 64, k = 64}]\nprofile = false\n")

pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]


def recipe() -> list[str]:
    section = README.read_text().split("### My own repository's history on my machine", 1)[1]
    return section.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()


def _repo(path: Path) -> list[str]:
    """Three commits, each a kernel that keeps one more value in registers; their shas, oldest first."""
    path.mkdir()
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "gate.toml").write_text(MANIFEST)
    shas = []
    for n in (1, 2, 3):
        terms = " + ".join(f"x[threadIdx.x + {i}]" for i in range(n))
        (path / "k.cu").write_text(f"__global__ void k(float *x) {{ x[threadIdx.x] = {terms}; }}\n")
        subprocess.run([*GIT, "add", "."], cwd=path, check=True)
        subprocess.run([*GIT, "commit", "-qm", f"step {n}"], cwd=path, check=True)
        shas.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, check=True, capture_output=True,
                                   text=True).stdout.strip())
    return shas


def _wait_healthy(base: str, server: subprocess.Popen) -> None:
    """Until /healthz answers: what a reader does between typing the serve line and the loop."""
    while server.poll() is None:
        try:
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        try:
            server.wait(0.2)
        except subprocess.TimeoutExpired:
            pass
    raise AssertionError(f"gate serve exited with {server.returncode} before it answered")


def test_the_readme_recipe_gates_my_own_commits_into_a_history(tmp_path):
    lines = recipe()
    (serve_line,) = [line for line in lines if " gate serve " in f" {line} "]
    loop = "\n".join(line for line in lines if line != serve_line)
    assert serve_line.split("#")[0].strip().endswith("&") and "GATE_ALLOW_LOCAL_REPOS=true" in serve_line
    shas = _repo(tmp_path / "my-kernels")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bin_dir = tmp_path / "bin"          # `gate` as the installed console script would be: this checkout's
    bin_dir.mkdir()
    (bin_dir / "gate").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gate.cli "$@"\n')
    (bin_dir / "gate").chmod(0o755)
    env = gate_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", GATE_DATA_DIR=str(tmp_path / "data"),
                   GATE_TORCH_PCH="off")
    for name in ("GATE_DATABASE_URL", "GATE_API_TOKEN", "GATE_ALLOW_LOCAL_REPOS"):
        env.pop(name, None)
    serve = serve_line.split("#")[0].strip().removesuffix("&").replace("gate serve", f"gate serve --port {port}")
    loop = re.sub(r"^REPO=\S+", f"REPO={tmp_path / 'my-kernels'}", loop, flags=re.M).replace(":8000", f":{port}")

    base = f"http://127.0.0.1:{port}"
    with open(tmp_path / "serve.log", "w") as log:
        server = subprocess.Popen(["bash", "-c", serve], env=env, stdout=log, stderr=log, start_new_session=True)
        try:
            _wait_healthy(base, server)
            done = subprocess.run(["bash", "-c", loop], env=env, capture_output=True, text=True, timeout=900)
            revisions = httpx.get(f"{base}/api/v1/revisions/3", timeout=30).json()
            history = httpx.get(f"{base}/api/v1/kernels/tiny/history", params={"metric": "registers"},
                                timeout=30).json()
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(60)

    out = done.stdout + done.stderr
    assert done.returncode == 3, out          # the loop's last command: an incomplete verdict (no GPU)
    assert len(re.findall(r"^revision \d+: ", done.stdout, re.M)) == len(shas), out
    assert len(re.findall(r"^tiny\s+\S.*\bincomplete\b", done.stdout, re.M)) == len(shas), out
    assert revisions["sha"] == shas[-1] and revisions["jobs"][0]["verdict"]["verdict"] == "incomplete"
    points = [p for series in history["series"] for p in series["points"]]
    assert [p["sha"] for p in points] == shas, history      # one point per commit, oldest first
    assert all(p["value"] > 0 for p in points)
