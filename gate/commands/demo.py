"""`gate demo`: replay FlashCore's history as real commits, gate each, serve the dashboard."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="build a FlashCore history, gate it, serve the dashboard")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-serve", action="store_true", help="gate the history, print it, and exit")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate demo: integration work")
