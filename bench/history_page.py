"""How long the kernel page takes on the server over a 10,000-revision history.

Builds a SQLite database (migrated schema) holding 10,000 synthetic revisions of one kernel
(`flashcore_wmma`, two shapes, every metric the executor stores), then requests
`/kernels/flashcore_wmma` through the ASGI app in-process (no network, no browser) and prints the
median and p95 of the server time over repeated requests: served from the page cache (the same
history), and with every request a cache miss (the first view after each new verdict).

    python bench/history_page.py [--revisions 10000] [--requests 30] [--db PATH]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from gate.api.app import create_app
from gate.api.page_cache import PageCache
from gate.config import Settings
from gate.demo_history import seed_history
from gate.storage import schema
from gate.storage.db import make_engine


def build(db: Path, revisions: int) -> None:
    engine = make_engine(f"sqlite:///{db}")
    schema.upgrade(engine)
    with Session(engine) as session:
        seed_history(session, revisions=revisions, kernels=["flashcore_wmma"], a100=False,
                     stages=False, queue=False)
    engine.dispose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--revisions", type=int, default=10_000)
    p.add_argument("--requests", type=int, default=30)
    p.add_argument("--db", type=Path, default=None, help="reuse (or create) this SQLite file")
    args = p.parse_args()
    db = args.db or Path(tempfile.mkdtemp()) / "history.db"
    if not db.exists():
        t0 = time.perf_counter()
        build(db, args.revisions)
        print(f"built {db} with {args.revisions} revisions in {time.perf_counter() - t0:.1f} s")
    app = create_app(Settings(database_url=f"sqlite:///{db}", data_dir=db.parent / "data"),
                     embedded_executor=False)
    url = "/kernels/flashcore_wmma"
    with TestClient(app) as client:
        first = time.perf_counter()
        response = client.get(url)
        first_ms = 1e3 * (time.perf_counter() - first)
        response.raise_for_status()
        cached = _times_ms(client, url, args.requests)
        # Every request a miss: the cost the first view after each new verdict pays.
        app.state.page_cache = PageCache(max_entries=0)
        uncached = _times_ms(client, url, args.requests)
    print(f"{url}: {len(response.content) / 1024:.0f} KiB HTML; first request {first_ms:.0f} ms")
    for label, times_ms in (("cached", cached), ("uncached", uncached)):
        p95 = times_ms[min(len(times_ms) - 1, round(0.95 * len(times_ms)) - 1)]
        print(f"  {label:>8}: over {args.requests} requests median "
              f"{statistics.median(times_ms):.0f} ms, p95 {p95:.0f} ms")


def _times_ms(client: TestClient, url: str, requests: int) -> list[float]:
    times_ms = []
    for _ in range(requests):
        t = time.perf_counter()
        client.get(url).raise_for_status()
        times_ms.append(1e3 * (time.perf_counter() - t))
    return sorted(times_ms)


if __name__ == "__main__":
    main()
