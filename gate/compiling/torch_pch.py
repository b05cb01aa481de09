"""Precompiled torch headers for the binding compile: where they are, and when a compile may use one.

A cold job's binding compile is mostly GCC reading torch's headers (38.7 s, 21.5 s with
`torch/extension.h` precompiled, on 2 cores); docs/measurements.md says how the gate makes and offers
them. GCC uses a `.gch` only for the unit's first `#include`, and only when valid for the command
line, so other sources compile as before (force-including, `-include`, would change what they mean).
The object is byte for byte the same either way (tests/compiling/test_torch_pch.py), so its cache key
ignores the offer. Layout:
`<root>/<key>/`; in it, per header, the `.gch`, an `#include_next` stub (a second `#include` would
otherwise stop GCC), `<header>.json` (the files it was made from), or `<header>.failed`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gate.compiling.build_cache import Toolchain, hash_parts

LAYOUT = "1"                       # bump when the folder's files or the way they are made change
NAME_DEFINE = "-DTORCH_EXTENSION_NAME="
# Headers a binding may name first that `GATE_TORCH_PCH` may list: a plain relative path, which
# becomes a file name inside the key's folder.
HEADER_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(h|hpp|hh)$")

_BLOCK_COMMENT = re.compile(rb"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(rb"//[^\n]*")
_INCLUDE = re.compile(rb'\s*#\s*include\s*[<"]([^>"]+)[>"]')


def valid_header(name: str) -> bool:
    return bool(HEADER_NAME.match(name)) and ".." not in name.split("/")


def base_command(command: list[str]) -> list[str]:
    """`command` without the gate's `-DTORCH_EXTENSION_NAME=`: one precompiled header serves every
    extension (torch's headers never read that macro; if one did, GCC would refuse the `.gch`)."""
    return [a for a in command if not a.startswith(NAME_DEFINE)]


def key(command: list[str], versions: Toolchain) -> str:
    """The folder of the precompiled headers made with `command`'s flags by this toolchain."""
    return hash_parts((label, value.encode()) for label, value in (
        ("layout", LAYOUT), ("command", "\0".join(base_command(command))), ("torch", versions.torch_version),
        ("cuda", versions.cuda_version), ("compiler", versions.compiler_version)))


def first_include(source: bytes) -> str | None:
    """The header named by the first `#include` of a source, or None when code comes before any."""
    text = _LINE_COMMENT.sub(b"", _BLOCK_COMMENT.sub(b" ", source.replace(b"\\\n", b"")))
    for line in text.splitlines():
        if not line.strip():
            continue
        found = _INCLUDE.match(line)
        if found:
            return found.group(1).decode(errors="replace")
        if not line.lstrip().startswith(b"#"):
            return None
    return None


@dataclass(frozen=True)
class Offer:
    command: list[str]             # the command to run: with the header's folder, or as it was
    note: str = ""                 # for the build log: what was offered, or why not


@dataclass(frozen=True)
class Precompiled:
    """The precompiled headers under `root` that a compile by the toolchain of `versions` may use."""

    root: Path
    versions: Toolchain

    def offer(self, command: list[str], source: Path, cwd: Path) -> Offer:
        """`command` with the folder of a precompiled header when one exists for the source's first
        include, made for this command and toolchain, still fresh and not shadowed by the checkout."""
        try:
            header = first_include(source.read_bytes())
        except OSError:
            return Offer(command)
        folder = Path(self.root) / key(command, self.versions)
        if header is None or not valid_header(header) or not (folder / f"{header}.gch").is_file():
            return Offer(command)
        deps = made_from(folder / f"{header}.json")
        if deps is None:
            return Offer(command, f"precompiled {header} unreadable: not used")
        if changed := changed_since(deps):
            return Offer(command, f"precompiled {header} not used: {changed} changed since it was made")
        if shadow := _shadowed([p for p, _, _ in deps], command, cwd):
            return Offer(command, f"precompiled {header} not used: the checkout's {shadow} comes before torch's")
        cut = command.index("-I.") + 1 if "-I." in command else 1
        return Offer([*command[:cut], f"-I{folder}", "-Winvalid-pch", *command[cut:]],
                     f"precompiled {header} offered")


def made_from(made: Path) -> list[tuple[str, int, int]] | None:
    """The files a `.gch` was made from, with sizes and times (`<header>.json`); None if unreadable."""
    try:
        return [(str(p), int(size), int(mtime)) for p, size, mtime in json.loads(made.read_text())["deps"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def changed_since(deps: list[tuple[str, int, int]]) -> str | None:
    """The first of `deps` whose size or time is not what it was when the `.gch` was made."""
    for path, size, mtime in deps:
        try:
            st = os.stat(path)
        except OSError:
            return path
        if st.st_size != size or st.st_mtime_ns != mtime:
            return path
    return None


def _shadowed(paths: list[str], command: list[str], cwd: Path) -> str | None:
    """A file in a relative `-I` directory (the checkout: `-I.`) that an include of one of `paths`
    could find first. An include name that reaches `/a/b/c.h` is a tail of it (`c.h`, `b/c.h`), so
    only a directory whose entries match a part of some path needs a closer look."""
    for flag in command:
        if not flag.startswith("-I") or Path(flag[2:]).is_absolute() or not flag[2:]:
            continue
        top = Path(cwd) / flag[2:]
        try:
            entries = set(os.listdir(top))
        except OSError:
            continue
        for path in paths:
            parts = path.strip("/").split("/")
            for i, part in enumerate(parts):
                if part in entries and (top / "/".join(parts[i:])).exists():
                    return "/".join(parts[i:])
    return None
