"""`gate run`: the whole pipeline on this machine, no server. Table for people, JSON with --json."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="gate a revision locally (no server)")
    p.add_argument("--repo", required=True, help="path or git URL of a repository with gate.toml")
    p.add_argument("--sha", default="HEAD", help="candidate revision (default HEAD)")
    p.add_argument("--base", default=None, help="baseline revision (default: the candidate's parent)")
    p.add_argument("--kernel", action="append", dest="kernels", default=None, help="only this kernel")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate run: owned by the pipeline work")
