"""`gate submit`: hand a revision to a running server; `--wait` follows it to the verdict."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="submit a revision to a server")
    p.add_argument("--server", required=True, help="base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--repo", required=True, help="local path or git URL")
    p.add_argument("--sha", required=True, help="revision (sha or ref)")
    p.add_argument("--branch", default=None)
    p.add_argument("--base", dest="base_sha", default=None, help="baseline revision")
    p.add_argument("--kernel", action="append", dest="kernels", default=None)
    p.add_argument("--wait", action="store_true", help="follow progress; exit with the verdict's code")
    p.add_argument("--token", default=None, help="bearer token (default: $GATE_API_TOKEN)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate submit: owned by the service work (storage/API/executor)")
