"""NVIDIA's command-line tools: where they are installed (the folders a box binds), and what they print
when asked: "" when a tool is missing, fails or hangs (evidence and keys, never a reason to stop a job).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

# Where the toolkit's `ncu` launcher looks for the Nsight Compute it runs when it is not inside the
# toolkit: `<cuda>/bin/ncu` is a script that searches `<cuda>/nsight-compute-*` (bound with the
# toolkit), then NVIDIA's default install folder. Seen on the device: with /opt hidden, every profile
# ended "nsight-compute directory is not found under /usr/local/cuda-13.0/bin/../ or /opt/nvidia".
NSIGHT_COMPUTE_HOMES = (Path("/opt/nvidia/nsight-compute"),)


def tool_output(command: list[str], timeout_s: float = 30.0) -> str:
    if shutil.which(command[0]) is None:
        return ""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def tool_version(path: str) -> str:
    """`<path> --version`, once per installed binary (size, mtime): ncu takes a noticeable part of a
    second to answer, and a reused job should cost the parent little."""
    found = shutil.which(path)
    if found is None:
        return ""
    stat = os.stat(found)
    return _version_of(found, stat.st_size, stat.st_mtime_ns)


@cache
def _version_of(found: str, _size: int, _mtime_ns: int) -> str:
    return tool_output([found, "--version"])


def install_dirs(search_path: str) -> list[Path]:
    """The installs of nvcc (its toolkit) and ncu (its folder, and the Nsight Compute its launcher
    runs) that `GATE_NVCC_PATH`, `GATE_NCU_PATH` or the names on `search_path` (a box's PATH) find."""
    found: list[Path] = []
    for name, setting in (("nvcc", "GATE_NVCC_PATH"), ("ncu", "GATE_NCU_PATH")):
        for candidate in (os.environ.get(setting, ""), name):
            tool = shutil.which(candidate, path=search_path) if candidate else None
            if tool:
                found.append(_install_root(Path(tool)))
                if name == "ncu":
                    found += [home for home in NSIGHT_COMPUTE_HOMES if home.is_dir()]
    return found


def _install_root(tool: Path) -> Path:
    """The installation a tool belongs to: `<root>/bin/nvcc` -> `<root>`; ncu's own directory otherwise."""
    tool = tool.resolve()
    return tool.parent.parent if tool.parent.name == "bin" else tool.parent
