"""`gate migrate`: bring the database schema to the newest Alembic revision."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("migrate", help="apply database migrations")


def main(args: argparse.Namespace) -> int:
    from gate.config import get_settings
    from gate.storage.db import make_engine
    from gate.storage.schema import current_revision, upgrade

    engine = make_engine(get_settings(service=True).database_url)
    upgrade(engine)
    print(f"database at schema revision {current_revision(engine)}")
    engine.dispose()
    return 0
