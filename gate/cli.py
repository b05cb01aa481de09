"""The `gate` console script. Exit codes for verdict commands: 0 accept, 1 reject, 2 error, 3 other."""

from __future__ import annotations

import argparse
import importlib
import sys

from gate.commands import COMMANDS
from gate.errors import GateError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gate", description="FlashCore Gate: gate CUDA kernel revisions.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except GateError as exc:
        print(f"gate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
