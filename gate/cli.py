"""The `gate` console script. Exit codes for verdict commands: `EXIT_CODES` (from `Verdict.exit_code`).

Every option's default is printed by `--help` (`state_defaults`), so the README's usage block can
state them and tests/commands/test_readme_usage.py can hold the two to each other.
"""

from __future__ import annotations

import argparse
import importlib
import sys

import gate
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


def shown_default(action: argparse.Action) -> object | None:
    """The default `--help` states for an option, or None where there is nothing to state (unset, off)."""
    if action.default in (None, False, argparse.SUPPRESS) or action.help == argparse.SUPPRESS:
        return None
    return action.default


def state_defaults(parser: argparse.ArgumentParser) -> None:
    """Append "(default: X)" to the help of every option that has a default worth stating: argparse's
    `ArgumentDefaultsHelpFormatter` would also print "(default: None)" and "(default: False)", and
    shows nothing for an option without help."""
    for action in parser._actions:
        if shown_default(action) is not None and "%(default)" not in (action.help or ""):
            action.help = f"{action.help or ''} (default: %(default)s)".lstrip()


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's parser by its words (`"serve"`, `"profile import"`), nested ones included."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found[name] = child
                found.update({f"{name} {inner}": p for inner, p in subparsers(child).items()})
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gate", description="FlashCore Gate: gate CUDA kernel revisions.",
                                     epilog=exit_codes_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {gate.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        command = importlib.import_module(module)
        command.add_parser(sub)
        sub.choices[name].set_defaults(func=command.main)
    for child in subparsers(parser).values():
        state_defaults(child)
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
