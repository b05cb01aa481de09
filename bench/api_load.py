"""Heavy traffic against a real `gate serve`: many POSTs of the same submissions at once.

Issue 12 measured 500 POSTs of one sha at concurrency 50: 6 x 500, 6 connection errors, p95 15.4 s
and 488 identical revisions stored. This starts `gate serve` (local executor, the real pipeline) on a
fresh database, fires the POSTs, and prints the 5xx count, connection errors, latency percentiles and
revisions stored per distinct submission (the target: 0 x 5xx, exactly 1), then how long the queue
took to drain. The repository is the sample kernel (`tests/samples`); on a machine without a GPU its
jobs end fast (no GPU stage can run: never `accept`).

    python bench/api_load.py --database-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres
        [--requests 500] [--concurrency 50] [--shas 1]

A PostgreSQL URL names the server: a database `gate_bench_<random>` is created there and dropped
after. A SQLite URL (`sqlite:///path.db`) is used as given.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import httpx
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from samples.build import commit_files, make_repo  # noqa: E402

from gate.storage.db import make_engine, normalize_url  # noqa: E402
from gate.storage.models import Job, JobState, Revision  # noqa: E402

TRANSPORT_ERRORS = (httpx.TransportError,)


@contextmanager
def fresh_database(url: str):  # noqa: ANN201
    """A PostgreSQL database created for this run on `url`'s server (dropped after); SQLite as given."""
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() != "postgresql":
        yield url
        return
    name = f"gate_bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(parsed, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield parsed.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def gate_serve(database_url: str, data_dir: Path, log_path: Path):  # noqa: ANN201
    """`gate serve` with its embedded (local) executor on a free loopback port; its base URL."""
    port = free_port()
    env = {**os.environ, "GATE_DATABASE_URL": database_url, "GATE_DATA_DIR": str(data_dir),
           "GATE_EXECUTOR": "local", "PYTHONPATH": str(ROOT),
           "GATE_ALLOW_LOCAL_REPOS": "1"}       # the repository is made on this disk; gate serve refuses those by default
    for private in ("GATE_API_TOKEN", "GATE_GITHUB_TOKEN", "GATE_TEST_PIPELINE"):
        env.pop(private, None)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "gate.cli", "serve", "--port", str(port)],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None:
                    raise SystemExit(f"gate serve exited ({proc.returncode}); see {log_path}")
                time.sleep(0.2)
            else:
                raise SystemExit(f"gate serve did not answer /healthz in 120 s; see {log_path}")
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def fire(base: str, payloads: list[dict], concurrency: int) -> list[tuple[int | str, float]]:
    """POST every payload, at most `concurrency` at once: (status code or error name, seconds)."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120) as client:
        async def one(payload: dict) -> tuple[int | str, float]:
            async with gate:
                started = time.perf_counter()
                try:
                    reply = await client.post("/api/v1/revisions", json=payload)
                    return reply.status_code, time.perf_counter() - started
                except TRANSPORT_ERRORS as exc:
                    return type(exc).__name__, time.perf_counter() - started
        return await asyncio.gather(*(one(p) for p in payloads))


def percentile(values: list[float], pct: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1] if len(values) > 1 else values[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--database-url", default=os.environ.get("GATE_TEST_POSTGRES_URL"),
                        help="PostgreSQL server (a database is made for the run) or a SQLite file")
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--shas", type=int, default=1, help="distinct commits the POSTs cycle through")
    parser.add_argument("--drain-timeout-s", type=float, default=600)
    args = parser.parse_args()
    if not args.database_url:
        parser.error("--database-url (or GATE_TEST_POSTGRES_URL) is required")
    scratch = Path(tempfile.mkdtemp(prefix="gate-api-load-"))
    scratch.chmod(0o755)                              # the box runs compiles as another user
    repo, shas = make_repo(scratch / "src")
    commits = [shas["base"]] + [commit_files(repo, {f"NOTES-{i}.md": f"{i}\n"}, f"note {i}")
                                for i in range(1, args.shas)]
    payloads = [{"repo": str(repo), "sha": commits[i % len(commits)]} for i in range(args.requests)]
    with fresh_database(args.database_url) as url, gate_serve(url, scratch / "data", scratch / "serve.log") as base:
        started = time.perf_counter()
        answers = asyncio.run(fire(base, payloads, args.concurrency))
        wall_s = time.perf_counter() - started
        engine = make_engine(url)
        with engine.connect() as conn:
            stored = Counter(dict(conn.execute(select(Revision.sha, func.count()).group_by(Revision.sha)).all()))
        drain_started = time.perf_counter()
        open_jobs = None
        while time.perf_counter() - drain_started < args.drain_timeout_s:
            with engine.connect() as conn:
                open_jobs = conn.scalar(select(func.count()).select_from(Job)
                                        .where(Job.state.in_([JobState.QUEUED, JobState.RUNNING])))
                jobs = conn.scalar(select(func.count()).select_from(Job))
            if not open_jobs:
                break
            time.sleep(0.5)
        drain_s = time.perf_counter() - started
        engine.dispose()
    codes = Counter(code for code, _ in answers)
    latencies = [seconds for _, seconds in answers]
    errors = sum(n for code, n in codes.items() if isinstance(code, str))
    five_xx = sum(n for code, n in codes.items() if isinstance(code, int) and code >= 500)
    per_submission = [stored.get(sha, 0) for sha in commits]
    print(f"{make_url(normalize_url(url)).get_backend_name()}: {args.requests} POSTs, concurrency {args.concurrency}, "
          f"{len(commits)} distinct submission(s), {wall_s:.1f} s ({args.requests / wall_s:.0f} req/s)")
    print(f"  status codes: {dict(sorted(codes.items(), key=str))}")
    print(f"  5xx: {five_xx}   connection errors: {errors}")
    print(f"  latency: p50 {percentile(latencies, 50) * 1000:.0f} ms, p95 {percentile(latencies, 95) * 1000:.0f} ms, "
          f"max {max(latencies) * 1000:.0f} ms")
    print(f"  revisions stored per distinct submission: {per_submission}")
    print(f"  jobs: {jobs}, all finished {drain_s:.1f} s after the first POST" if not open_jobs
          else f"  jobs: {jobs}, {open_jobs} still open after {args.drain_timeout_s:.0f} s")
    return 0 if five_xx == 0 and errors == 0 and set(per_submission) == {1} else 1


if __name__ == "__main__":
    sys.exit(main())
