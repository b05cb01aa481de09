"""How long every page and the history API take over a long history, on SQLite and on PostgreSQL.

Builds the sample history (`gate.sample`: four jobs a revision, flashcore_wmma also on an A100, ~72
figures a job; stage payloads for the newest 200 revisions, the ones a revision page shows) at
--revisions (100,000 by default) into a SQLite file and a PostgreSQL database this script creates,
then requests through the ASGI app in-process (no network, no browser):

    /                                       the overview
    /kernels/flashcore_wmma                 a kernel page
    /revisions/<newest judged revision>     a revision page
    /compare?a=<its parent>&b=<it>          the compare page
    /api/v1/kernels/flashcore_wmma/history?metric=latency_median_us   the history API

and prints, per page and backend, the p50 and p95 of --requests warm requests (after the app's
history warm-up has finished and the page was requested once) and the cold time: a freshly started
app's first request of that page, its history warm-up (`gate/api/series_warmup.py`) still running. Targets: p95
within 200 ms warm, within 1 s cold.

A restarted server loads the histories its last run saved (`gate/storage/series_snapshot.py`), so
before the cold starts one app runs its warm-up to the end over a data dir with no saved history:
the time that first warm-up takes (every history read from the database) is printed too.

Building takes long (see docs/measurements.md); --db and --database-url reuse a built database
(a missing SQLite file is built; a PostgreSQL database is built when it holds no revision).
Either database is migrated to the newest schema first, so a database built before a migration
gains its indexes.

    python bench/page_speed.py [--revisions 100000] [--requests 30] [--restarts 3]
        [--db PATH] [--database-url postgresql+psycopg://postgres@127.0.0.1:5432/gate_page_speed]
        [--backends sqlite,postgresql] [--build-only]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import threading
import tempfile
import time
from pathlib import Path

import psycopg
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from gate.api.app import create_app
from gate.config import Settings
from gate.sample import seed_judged_history
from gate.storage import schema
from gate.storage.unit import Store

KERNEL = "flashcore_wmma"
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/gate_page_speed"
STAGED = 200          # the newest revisions with stage payloads


def build(url: str, revisions: int) -> float:
    """Migrate the database at `url` and fill it with the sample history unless it holds one;
    the seconds building took (0 when it was reused)."""
    store = Store.from_url(url)
    try:
        schema.upgrade(store.engine)
        with store.unit() as uow:
            if uow.samples.holds_revisions():
                return 0.0
            t0 = time.perf_counter()
            seed_judged_history(uow, revisions=revisions, stage_revisions=STAGED)
        if store.backend == "postgresql":
            # What autovacuum does soon after a bulk load: statistics for the planner, and the
            # visibility map that lets a count read an index alone.
            with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM ANALYZE")
        return time.perf_counter() - t0
    finally:
        store.dispose()


def create_pg_database(url: str) -> None:
    """Create the PostgreSQL database `url` names, on the server it names, unless it exists."""
    parsed = make_url(url)
    server = parsed.set(database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(server.replace("postgresql+psycopg", "postgresql"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (parsed.database,)).fetchone():
            conn.execute(f'CREATE DATABASE "{parsed.database}"')


def pages(url: str) -> dict[str, str]:
    """The paths of the pages measured: the newest judged revision, compared with its parent."""
    store = Store.from_url(url)
    try:
        with store.unit() as uow:
            newest, parent = uow.revisions.with_sha_prefix("", limit=3)[1:3]   # [0] is the one in flight
    finally:
        store.dispose()
    return {"overview": "/", "kernel": f"/kernels/{KERNEL}", "revision": f"/revisions/{newest[0]}",
            "compare": f"/compare?a={parent[0]}&b={newest[0]}",
            "history API": f"/api/v1/kernels/{KERNEL}/history?metric=latency_median_us"}


def measure(url: str, data_dir: Path, requests: int, restarts: int) -> dict[str, tuple[float, float, float]]:
    """page -> (p50 warm, p95 warm, worst cold) in ms."""
    settings = Settings(database_url=url, data_dir=data_dir)
    paths = pages(url)
    print(f"first start: warm-up read every history in {first_warmup(settings):.1f} s", flush=True)
    cold: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(restarts):
        for name, path in paths.items():
            with TestClient(create_app(settings, embedded_executor=False)) as client:
                cold[name] += _times_ms(client, path, 1)
    out = {}
    with TestClient(create_app(settings, embedded_executor=False)) as client:
        client.app.state.series_warmup.done.wait()     # warm: not sharing the process with the warm-up
        for name, path in paths.items():
            _times_ms(client, path, 1)
            warm = _times_ms(client, path, requests)
            out[name] = (statistics.median(warm), _p95(warm), max(cold[name]))
    return out


def first_warmup(settings: Settings) -> float:
    """Seconds an app whose data dir holds no saved history takes to read every history; returns
    once what it read is saved, as a server that ran a while would have it."""
    shutil.rmtree(settings.data_dir / "series", ignore_errors=True)
    t = time.perf_counter()
    with TestClient(create_app(settings, embedded_executor=False)) as client:
        client.app.state.series_warmup.done.wait()
        took = time.perf_counter() - t
    for thread in threading.enumerate():
        if thread.name == "series-snapshot":
            thread.join()
    return took


def _p95(times_ms: list[float]) -> float:
    return times_ms[min(len(times_ms) - 1, round(0.95 * len(times_ms)) - 1)]


def _times_ms(client: TestClient, path: str, requests: int) -> list[float]:
    times_ms = []
    for _ in range(requests):
        t = time.perf_counter()
        client.get(path).raise_for_status()
        times_ms.append(1e3 * (time.perf_counter() - t))
    return sorted(times_ms)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--revisions", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=30)
    p.add_argument("--restarts", type=int, default=3, help="fresh apps per page for the cold time")
    p.add_argument("--db", type=Path, default=None, help="reuse (or build) this SQLite file")
    p.add_argument("--database-url", default=PG_URL, help="reuse (or build) this PostgreSQL database")
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument("--build-only", action="store_true")
    args = p.parse_args()
    db = args.db or Path(tempfile.mkdtemp()) / "history.db"
    urls = {"sqlite": f"sqlite:///{db.resolve()}", "postgresql": args.database_url}
    results = {}
    for backend in args.backends.split(","):
        if backend == "postgresql":
            create_pg_database(urls[backend])
        took = build(urls[backend], args.revisions)
        if took:
            print(f"{backend}: built {args.revisions} revisions in {took / 60:.1f} min", flush=True)
        if not args.build_only:
            results[backend] = measure(urls[backend], db.parent / "data", args.requests, args.restarts)
    _print_table(results)


def _print_table(results: dict[str, dict[str, tuple[float, float, float]]]) -> None:
    if not results:
        return
    print("| page | backend | p50 warm (ms) | p95 warm (ms) | cold (ms) |")
    print("| --- | --- | --- | --- | --- |")
    for name in next(iter(results.values())):
        for backend, table in results.items():
            p50, p95, cold = table[name]
            print(f"| {name} | {backend} | {p50:.0f} | {p95:.0f} | {cold:.0f} |")


if __name__ == "__main__":
    main()
