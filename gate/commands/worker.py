"""`gate worker`: a GPU worker that takes jobs from the database (local) or the broker (celery)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="run jobs for one GPU kind")
    p.add_argument("--gpu-kind", default=None, help="route key; default: this machine's GPU name")
    p.add_argument("--once", action="store_true", help="run queued jobs, then exit")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate worker: owned by the service work (storage/API/executor)")
