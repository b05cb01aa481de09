"""The `gate` console script. Exit codes for verdict commands: `EXIT_CODES` (from `Verdict.exit_code`)."""

from __future__ import annotations

import argparse
import importlib
import sys

from gate.commands import COMMANDS
from gate.domain.verdict import Verdict
from gate.errors import GateError


def exit_codes_text() -> str:
    """The exit codes of the commands that end in a verdict, as `gate --help` lists them."""
    by_code: dict[int, list[str]] = {}
    for verdict in Verdict:
        by_code.setdefault(verdict.exit_code, []).append(verdict.value)
    lines = [f"  {code}  {' or '.join(names)}" for code, names in sorted(by_code.items())]
    return ("exit codes of run and submit --wait (several kernels: the most severe verdict decides):\n"
            + "\n".join(lines) + "\n  2  also: bad input (a message names it), or the gate itself failed")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gate", description="FlashCore Gate: gate CUDA kernel revisions.",
                                     epilog=exit_codes_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
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
