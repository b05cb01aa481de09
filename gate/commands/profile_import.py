"""`gate profile import FILE.ncu-rep [--json]`: the gate metrics of every kernel in a report."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="Nsight Compute reports")
    psub = p.add_subparsers(dest="profile_command", required=True, metavar="ACTION")
    imp = psub.add_parser("import", help="print the gate metrics of every kernel in a .ncu-rep")
    imp.add_argument("file", help="an Nsight Compute report (.ncu-rep)")
    imp.add_argument("--json", action="store_true")
    imp.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    raise NotImplementedError("gate profile import: owned by the profiler work")
