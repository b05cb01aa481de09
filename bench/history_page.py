"""How long the kernel page takes on the server over a 10,000-revision history.

Builds a SQLite database (migrated schema) holding 10,000 synthetic revisions of one kernel
(`flashcore_wmma`, two shapes, every metric the executor stores), then requests
`/kernels/flashcore_wmma` through the ASGI app in-process (no network, no browser) and prints the
median and p95 of the server time over repeated requests:

- cached: the same history again, served from the page cache;
- miss: a new revision with its verdict and metrics (a copy of the newest one's) is stored before
  each request (not timed), so every request is the first view after a new verdict;
- cold, racing: the first request of a freshly started app, sent as soon as it has started, while
  its history warm-up (`gate/api/series_warmup.py`) is still reading: a restart under load;
- cold, warmed: the first request of a freshly started app sent once its warm-up has finished.
  Both are first views: the page cache is empty, so the page is built.

With --db the file is reused and keeps the revisions each run adds.

    python bench/history_page.py [--revisions 10000] [--requests 30] [--restarts 5] [--db PATH]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from gate.api.app import create_app
from gate.config import Settings
from gate.sample import seed_judged_history
from gate.storage import schema
from gate.storage.unit import Store

KERNEL = "flashcore_wmma"


def build(db: Path, revisions: int) -> None:
    store = Store.from_url(f"sqlite:///{db}")
    schema.upgrade(store.engine)
    with store.unit() as uow:
        seed_judged_history(uow, revisions=revisions, kernels=["flashcore_wmma"], a100=False,
                            stages=False, queue=False)
    store.dispose()


def add_verdict(db: Path) -> None:
    """One more revision of the kernel: a copy of the newest one's job, verdict and metrics."""
    store = Store.from_url(f"sqlite:///{db}")
    with store.unit() as uow:
        uow.samples.append_judged_revision(KERNEL)
        uow.commit()
    store.dispose()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--revisions", type=int, default=10_000)
    p.add_argument("--requests", type=int, default=30)
    p.add_argument("--restarts", type=int, default=5)
    p.add_argument("--db", type=Path, default=None, help="reuse (or create) this SQLite file")
    args = p.parse_args()
    db = args.db or Path(tempfile.mkdtemp()) / "history.db"
    if not db.exists():
        t0 = time.perf_counter()
        build(db, args.revisions)
        print(f"built {db} with {args.revisions} revisions in {time.perf_counter() - t0:.1f} s")
    settings = Settings(database_url=f"sqlite:///{db}", data_dir=db.parent / "data")
    url = f"/kernels/{KERNEL}"
    racing, warmed = [], []
    for _ in range(args.restarts):
        with TestClient(create_app(settings, embedded_executor=False)) as client:
            racing += _times_ms(client, url, 1)
        with TestClient(create_app(settings, embedded_executor=False)) as client:
            client.app.state.series_warmup.done.wait()
            warmed += _times_ms(client, url, 1)
    with TestClient(create_app(settings, embedded_executor=False)) as client:
        response = client.get(url)
        response.raise_for_status()
        cached = _times_ms(client, url, args.requests)
        miss = _times_ms(client, url, args.requests, before=lambda: add_verdict(db))
    print(f"{url}: {len(response.content) / 1024:.0f} KiB HTML")
    for label, times_ms in (("cached", cached), ("miss", miss), ("cold, racing", sorted(racing)),
                            ("cold, warmed", sorted(warmed))):
        p95 = times_ms[min(len(times_ms) - 1, round(0.95 * len(times_ms)) - 1)]
        print(f"  {label:>12}: over {len(times_ms)} requests median "
              f"{statistics.median(times_ms):.0f} ms, p95 {p95:.0f} ms")


def _times_ms(client: TestClient, url: str, requests: int,
              before: Callable[[], None] = lambda: None) -> list[float]:
    times_ms = []
    for _ in range(requests):
        before()
        t = time.perf_counter()
        client.get(url).raise_for_status()
        times_ms.append(1e3 * (time.perf_counter() - t))
    return sorted(times_ms)


if __name__ == "__main__":
    main()
