"""The ncu command line and its run, the profile interface the profile stage calls: find ncu, ask its
version, compose the argument list, start it in a process group of its own."""

from __future__ import annotations

import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from gate.nvidia.ncu_catalog import requested_metrics
from gate.nvidia.source_counters import SECTION as SOURCE_SECTION
from gate.nvidia.tools import tool_output


def find(ncu_path: str) -> str | None:
    """The absolute path of ncu (`GATE_NCU_PATH`: a name on PATH or a path); None when absent."""
    return shutil.which(ncu_path)


def parse_version(text: str) -> str:
    """`Version 2025.3.1.0 (build ...)` -> `2025.3.1.0`; "" when the text says no version."""
    match = re.search(r"Version\s+([\d.]+)", text)
    return match.group(1) if match else ""


@cache
def version(ncu: str) -> str:
    """ncu's version (""): recorded with every profile, as ratios compare only between equal versions."""
    return parse_version(tool_output([ncu, "--version"]))


def command(ncu: str, arch: str, clock_control: str, report_base: Path, target: list[str]) -> list[str]:
    """The ncu argument list (no shell) that profiles `target` with `arch`'s gate metrics."""
    return [
        ncu, "--target-processes", "all",
        "--profile-from-start", "off",       # only launches between cudaProfilerStart/Stop
        "--nvtx",                            # record the NVTX range (the shape) of each launch
        "--replay-mode", "kernel",
        "--cache-control", "all",            # caches flushed before every replay pass
        "--clock-control", clock_control,    # identical for both sides of a comparison
        "--metrics", ",".join(requested_metrics(arch)),
        "--section", SOURCE_SECTION,         # per-instruction counters: where in the source it got slower
        "-f", "-o", str(report_base),
        *target,
    ]


def start(argv: list[str], log_path: Path, env: dict[str, str]) -> subprocess.Popen:
    """`argv` in a process group of its own (cancelling kills ncu and its target together), its console
    output in `log_path` (a file, not a pipe: nobody reads it until the end)."""
    with open(log_path, "w") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
