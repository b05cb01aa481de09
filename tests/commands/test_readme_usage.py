"""The README's usage block ("Using it") and the command line agree: the same commands, the same options,
required ones never shown optional, every stated default the one `--help` states, and `gate --version`.

The block's notation: `gate WORDS` then items; `[--opt VALUE]` is optional, `--opt VALUE` required (or the
form a line shows); a VALUE in lower case is the default, in upper case what to give; `...` after an item
means it may be repeated; an upper-case word alone is a positional argument. A line that starts with
blanks continues the previous one."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import gate
from gate.cli import build_parser, shown_default, subparsers

README = Path(__file__).resolve().parents[2] / "README.md"
ITEM = re.compile(r"(?P<open>\[)?(?P<option>--[\w-]+)(?: (?P<value>[^\s\[\]]+))?(?P<close>\])?(?P<repeat>\.\.\.)?"
                  r"|(?P<positional>\b[A-Z][\w.-]*)")


@dataclass(frozen=True)
class Item:
    option: str            # "--port", or "" for a positional
    value: str | None      # "8000", "PATH", None for a flag
    optional: bool
    repeated: bool


def usage_block(text: str) -> list[str]:
    """The commands of the README's "Using it" block, continuation lines joined, comments dropped."""
    body = text.split("## Using it", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines: list[str] = []
    for line in body.splitlines():
        line = re.sub(r"\s+#.*$", "", line)
        if line[:1].isspace() and lines:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line.strip())
    return lines


def parse_line(line: str) -> tuple[str, list[Item]]:
    """("profile import", items) of `gate profile import FILE.ncu-rep [--json]`."""
    words = line.split()
    assert words[0] == "gate", line
    command = []
    for word in words[1:]:
        if not re.fullmatch(r"[a-z]+", word):
            break
        command.append(word)
    rest = " ".join(words[1 + len(command):])
    items = []
    for m in ITEM.finditer(rest):
        if m["positional"]:
            items.append(Item("", m["positional"], False, False))
        else:
            assert bool(m["open"]) == bool(m["close"]), f"unbalanced brackets around {m['option']} in {line!r}"
            items.append(Item(m["option"], m["value"], bool(m["open"]), bool(m["repeat"])))
    return " ".join(command), items


def documented() -> dict[str, list[list[Item]]]:
    found: dict[str, list[list[Item]]] = {}
    for line in usage_block(README.read_text()):
        command, items = parse_line(line)
        found.setdefault(command, []).append(items)
    return found


def options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.option_strings[-1]: a for a in parser._actions
            if a.option_strings and a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)}


def positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


PARSER = build_parser()
COMMANDS = {words: p for words, p in subparsers(PARSER).items() if not subparsers(p)}   # leaves only
DOCUMENTED = documented()


def test_the_readme_lists_every_command_and_no_other():
    assert set(DOCUMENTED) - {""} == set(COMMANDS)


@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_the_readme_and_the_parser_agree_on_a_commands_options(words):
    parser, lines = COMMANDS[words], DOCUMENTED[words]
    actions = options(parser)
    shown = {item.option for items in lines for item in items if item.option}
    assert shown == set(actions), f"gate {words}: README {sorted(shown)} vs --help {sorted(actions)}"
    for items in lines:
        given = {item.option: item for item in items if item.option}
        for name, action in actions.items():
            if action.required:
                assert name in given and not given[name].optional, f"gate {words}: {name} is required"
            if name not in given:
                continue
            item = given[name]
            assert (item.value is None) == (action.nargs == 0), f"gate {words} {name}: value {item.value!r}"
            assert item.repeated == isinstance(action, argparse._AppendAction), f"gate {words} {name}: `...`"
            default = shown_default(action)
            if default is not None:
                assert item.value == str(default), f"gate {words} {name}: README {item.value}, default {default}"
            elif item.value is not None:
                assert item.value.isupper(), f"gate {words} {name}: {item.value} reads as a default it lacks"
        assert len([i for i in items if not i.option]) == len(positionals(parser)), f"gate {words}: positionals"


@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_each_commands_help_states_the_defaults_the_readme_shows(words):
    text = " ".join(COMMANDS[words].format_help().split())
    for action in options(COMMANDS[words]).values():
        if (default := shown_default(action)) is not None:
            assert f"(default: {default})" in text, f"gate {words} --help does not state {action.dest}'s default"


def test_gate_version_prints_the_packages_version():
    assert DOCUMENTED[""] == [[Item("--version", None, False, False)]]
    done = subprocess.run([sys.executable, "-m", "gate.cli", "--version"], capture_output=True, text=True,
                          check=True, cwd=README.parent)
    assert done.stdout.strip() == f"gate {gate.__version__}"
    # One fact in one place: the wheel's version is read from the package, not written twice.
    pyproject = (README.parent / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'version = {attr = "gate.__version__"}' in pyproject


def test_the_parser_of_this_test_sees_what_it_must():
    command, items = parse_line("gate submit --server URL [--kernel NAME]... [--port 8000] [--wait] FILE.x")
    assert command == "submit"
    assert items == [Item("--server", "URL", False, False), Item("--kernel", "NAME", True, True),
                     Item("--port", "8000", True, False), Item("--wait", None, True, False),
                     Item("", "FILE.x", False, False)]
