"""`gate migrate`: bring the database schema to the newest Alembic revision."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("migrate", help="apply database migrations")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate migrate: owned by the service work (storage/API/executor)")
