"""What a tool prints when asked a question (`nvidia-smi --query-gpu=...`, `ncu --version`): its
standard output, or "" when it is missing, fails or hangs. For evidence and keys, never a reason to
stop a job; shared by the child's fingerprint and the parent's reuse key."""

from __future__ import annotations

import shutil
import subprocess


def tool_output(command: list[str], timeout_s: float = 30.0) -> str:
    if shutil.which(command[0]) is None:
        return ""
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""
