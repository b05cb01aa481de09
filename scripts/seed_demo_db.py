"""Fill a database with the synthetic sample history (SYNTHETIC SAMPLE DATA, nothing measured).

    python scripts/seed_demo_db.py --database-url sqlite:///demo.db [--revisions 60]

Migrates the schema first; refuses a database that already holds revisions.
"""

from __future__ import annotations

import argparse
import sys


from gate.sample import seed_judged_history
from gate.storage import schema
from gate.storage.unit import Store


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--database-url", required=True)
    p.add_argument("--revisions", type=int, default=60)
    p.add_argument("--kernel", action="append", dest="kernels", default=None)
    p.add_argument("--no-stages", action="store_true", help="skip stage payloads (smaller, faster)")
    args = p.parse_args(argv)
    store = Store.from_url(args.database_url)
    schema.upgrade(store.engine)
    with store.unit() as uow:
        if uow.samples.holds_revisions():
            print("refusing: the database already holds revisions", file=sys.stderr)
            return 1
        summary = seed_judged_history(uow, revisions=args.revisions, kernels=args.kernels,
                                      stages=not args.no_stages)
    print(f"seeded {summary.revisions} revisions, {summary.jobs} jobs, {summary.metrics} metrics "
          "(synthetic sample data)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
