"""`gate serve`: API + dashboards + (by default) the embedded local executor."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the API and dashboards (embedded executor by default)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-executor", action="store_true", help="serve only; jobs run on separate workers")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate serve: owned by the service work (storage/API/executor)")
