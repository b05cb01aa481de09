"""How fast the local executor drains its queue when the pipeline costs nothing: the executor's and the
database's own overhead per job (claim, heartbeat events, stored outcome). A real job adds its stages.

    python bench/local_drain.py [--jobs 200] [--database-url URL]   (default: a fresh SQLite file)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from service_fakes import FakePipeline, FakeSources  # noqa: E402

from gate.domain.job import RunOptions  # noqa: E402
from gate.executors.base import JobEnvironment  # noqa: E402
from gate.executors.local import LocalExecutor  # noqa: E402
from gate.services.submissions import plan_revision, submit_revision  # noqa: E402
from gate.storage.db import make_engine, make_session_factory  # noqa: E402
from gate.storage.unit import UnitOfWork  # noqa: E402
from gate.storage.schema import upgrade  # noqa: E402
from gate.storage.unit import Store  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--database-url", default=None, help="an empty database (it is migrated and filled)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gate-drain-"))
    engine = make_engine(args.database_url or f"sqlite:///{scratch / 'gate.db'}")
    upgrade(engine)
    sessions = make_session_factory(engine)
    with sessions() as s:
        uow = UnitOfWork(s)
        for _ in range(args.jobs // 4):
            revision_id = submit_revision(uow, repo="/src/flash", sha="HEAD")
            plan_revision(uow, revision_id, sources=FakeSources(kernels=("a", "b", "c", "d")))
    env = JobEnvironment(store=Store(engine), gate_job=FakePipeline(), data_dir=scratch, options=RunOptions())
    started = time.perf_counter()
    ran = LocalExecutor(env, gpus=[]).drain()
    elapsed_s = time.perf_counter() - started
    print(f"{engine.dialect.name}: {ran} jobs in {elapsed_s:.2f} s = {ran / elapsed_s:.1f} jobs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
