"""Making the precompiled torch headers that `torch_pch` offers to binding compiles.

Made by the gate itself, never inside a job (docs/measurements.md): the inputs are the installed torch
and a wrapper the gate writes, nothing of a submission, so it runs unboxed (jobs see its folder
read-only). One header takes about one binding compile (52 s for `torch/extension.h` of a CUDA torch
on 2 cores) and 0.2 to 0.8 GB of disk. It runs in an empty folder (its `-I.` finds nothing); a lock
file keeps two makers on one data folder from making the same header at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gate.compiling import torch_facts, torch_pch
from gate.compiling.build_cache import write_atomic
from gate.compiling.toolchain import Tools

MAKE_TIMEOUT_S = 1800
_DEP = re.compile(r"(?:\\.|[^\s\\])+")


@dataclass(frozen=True)
class Made:
    header: str
    state: str                 # "made", "there", "failed", "busy" (another process is making it)
    seconds: float = 0.0
    detail: str = ""           # the folder, or the compiler's log of a failure


def make(root: Path, tools: Tools, headers: list[str] | tuple[str, ...], *, retry: bool = False) -> list[Made]:
    """Every header of `headers` precompiled under `root` for `tools`' binding command (one that failed
    for this key only with `retry`). First, torch's facts go to `root` (`torch_facts`), so a job's
    child starts its binding compile without importing torch, made headers or not."""
    command = torch_pch.base_command(tools.cxx_command("pch"))
    folder = Path(root) / torch_pch.key(command, tools.versions)
    _mkdir(folder)
    if tools.torch.torch_file:          # "": a stand-in's, read from no torch
        torch_facts.save(root, tools.torch)
    with open(folder / ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return [Made(h, "busy") for h in headers]
        for left in sorted(folder.rglob(".tmp-*"), reverse=True):   # a dead maker's: nobody else holds the lock
            shutil.rmtree(left, ignore_errors=True) if left.is_dir() else left.unlink(missing_ok=True)
        return [_one(folder, command, header, retry) for header in headers]


def _one(folder: Path, command: list[str], header: str, retry: bool) -> Made:
    if not torch_pch.valid_header(header):
        return Made(header, "failed", detail=f"not a header name: {header!r}")
    gch, made, failed = folder / f"{header}.gch", folder / f"{header}.json", folder / f"{header}.failed"
    if retry:
        failed.unlink(missing_ok=True)
    if failed.is_file():
        return Made(header, "failed", detail=failed.read_text(errors="replace"))
    if gch.is_file() and _fresh(made):
        return Made(header, "there", detail=str(folder))
    gch.unlink(missing_ok=True)                 # stale: no compile may take it while the new one is made
    work = Path(tempfile.mkdtemp(dir=folder, prefix=".tmp-"))
    try:
        empty, wrapper = work / "cwd", work / "wrapper.h"
        empty.mkdir()
        # A wrapper, not the header itself: GCC ignores `#pragma once` in the file it compiles, and
        # the header must count as included once for a second `#include` of it.
        wrapper.write_text(f"#include <{header}>\n")
        out, deps = work / "out.gch", work / "out.d"
        start = time.perf_counter()
        run = subprocess.run([*command, "-x", "c++-header", str(wrapper), "-o", str(out), "-MD", "-MF", str(deps)],
                             cwd=empty, capture_output=True, text=True, errors="replace", timeout=MAKE_TIMEOUT_S)
        seconds = time.perf_counter() - start
        if run.returncode != 0:
            if run.returncode > 0:              # the compiler's answer; a killed one may do better next time
                _write(failed, (run.stdout + run.stderr)[-20000:])
            return Made(header, "failed", seconds, (run.stdout + run.stderr)[-2000:])
        read = [p for p in _dependencies(deps.read_text()) if p != str(wrapper)]
        _write(folder / header, f"#include_next <{header}>\n")
        _write(made, json.dumps({"header": header, "seconds": round(seconds, 1), "command": command,
                                 "deps": [[p, os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in read]}))
        out.chmod(0o644)
        os.replace(out, gch)
        return Made(header, "made", seconds, str(folder))
    except subprocess.TimeoutExpired:
        return Made(header, "failed", MAKE_TIMEOUT_S, f"timed out after {MAKE_TIMEOUT_S} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fresh(made: Path) -> bool:
    deps = torch_pch.made_from(made)
    return deps is not None and torch_pch.changed_since(deps) is None


def _dependencies(text: str) -> list[str]:
    """The files of a `-MD` dependency file, after its target."""
    words = [w.replace("\\ ", " ") for w in _DEP.findall(text.replace("\\\n", " "))]
    return words[1:] if words and words[0].endswith(":") else words


def _mkdir(path: Path) -> None:
    """`path` and its parents, readable by the box's user (who reads them when the gate runs as root)."""
    for part in reversed([path, *path.parents]):
        if not part.exists():
            part.mkdir()
            part.chmod(0o755)


def _write(target: Path, text: str) -> None:
    """`text` into `target` through a temporary name, its folders readable by the box's user."""
    _mkdir(target.parent)
    write_atomic(target, text)
