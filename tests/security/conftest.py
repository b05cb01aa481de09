"""Attacks on a real `gate serve` (issue 24, the service side): a server per test on a loopback port,
its database a SQLite file (or the session's PostgreSQL where the attack is about PostgreSQL), jobs
run by a fake pipeline through the `GATE_TEST_PIPELINE` seam, git repositories made on disk.

Every helper is bounded: requests carry timeouts, loops a count and a deadline, and only loopback
addresses are used.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.api.serve_process import ROOT, free_port, gate_env, start_server, wait_for
from tests.patience import HANG_S

HERE = Path(__file__).resolve().parent
# An answer under attack counts as prompt within 50 times the server's calm answer in the same test: a
# server starved by the attack waits for it (seconds to minutes), a busy machine slows both alike.
PROMPT_FACTOR = 50
PROMPT_FLOOR_S = 1.0
TOKEN = "api-token"
SECRET = "webhook-secret"
GIT_ENV = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
           "GIT_COMMITTER_EMAIL": "ada@example.com", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
GATE_TOML = ('[[kernel]]\nname = "attn"\nsources = ["attn.cu"]\nworkload = "gemm"\narch = ["sm_80"]\n'
             "shapes = [{m = 64, n = 64, k = 64}]\nprofile = false\n")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env={**GIT_ENV, "HOME": str(cwd)}, check=True,
                          capture_output=True, text=True, timeout=60).stdout.strip()


def make_repo(path: Path, files: dict[str, str], message: str = "first") -> str:
    """A git repository at `path` with `files` committed; the commit's sha."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD")


@dataclass
class Server:
    """`gate serve` in a child process; `texts` keeps every answer's body for the no-leak checks."""

    tmp: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    texts: list[str] = field(default_factory=list)
    calm_s: float = 0.0            # the slowest of three GETs of /healthz right after the first start

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return Path(self.env["GATE_DATA_DIR"])

    def start(self) -> Server:
        with open(self.tmp / "serve.log", "a") as log:
            self.proc = start_server(self.env, self.port, log)
        if not self.calm_s:
            self.calm_s = max(self._get_s("/healthz") for _ in range(3))
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        reply = httpx.request(method, self.url + path, timeout=kwargs.pop("timeout", 15), **kwargs)
        self.texts.append(reply.text)
        return reply

    def submit(self, repo: str, sha: str = "HEAD", **kwargs: object) -> httpx.Response:
        return self.request("POST", "/api/v1/revisions", json={"repo": repo, "sha": sha}, **kwargs)

    def revision(self, revision_id: int) -> dict:
        return self.request("GET", f"/api/v1/revisions/{revision_id}").json()

    def wait_done(self, revision_id: int, timeout_s: float = 60) -> dict:
        wait_for(lambda: self.revision(revision_id)["status"] in ("done", "cancelled"), timeout_s,
                 what=f"revision {revision_id} to finish")
        return self.revision(revision_id)

    def _get_s(self, path: str) -> float:
        started = time.monotonic()
        reply = self.request("GET", path, timeout=HANG_S)
        assert reply.status_code == 200, (path, reply.status_code, reply.text[:300])
        return time.monotonic() - started

    def prompt(self, took_s: float, what: str) -> None:
        """`what` took `took_s`: at most PROMPT_FACTOR times this server's calm answer, measured on this
        machine in this test, and at most PROMPT_FLOOR_S on a machine calm enough to answer in 20 ms."""
        bound = max(PROMPT_FLOOR_S, PROMPT_FACTOR * self.calm_s)
        assert took_s <= bound, f"{what} took {took_s:.2f} s; calm /healthz {self.calm_s:.3f} s, bound {bound:.2f} s"

    def timed_get(self, path: str) -> float:
        """Seconds one GET took (asserted 200 and prompt: `prompt`)."""
        took = self._get_s(path)
        self.prompt(took, f"GET {path}")
        return took

    def memory_kib(self, key: str) -> int:
        """`VmRSS` (now) or `VmHWM` (the peak) of the server process, from /proc."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {key} in /proc/{self.proc.pid}/status")

    def assert_no_server_paths(self) -> None:
        """No answer showed the server's data folder or its checkout (absolute server paths)."""
        for text in self.texts:
            assert str(self.data_dir) not in text and str(ROOT) not in text, text[:500]


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator:
    """`make_server(**GATE_settings)`: an unstarted `Server` on SQLite with the fake pipeline; every
    server is stopped after the test."""
    servers: list[Server] = []

    def make(**settings: str) -> Server:
        index = len(servers)
        env = {**gate_env(GATE_DATABASE_URL=f"sqlite:///{tmp_path / f'gate{index}.db'}",
                          GATE_DATA_DIR=str(tmp_path / f"data{index}"), GATE_WARM_HISTORY="0",
                          GATE_TEST_PIPELINE="attack_pipeline:judged"), **settings}   # gate_env drops a token
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(HERE)])
        server = Server(tmp_path, env)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
