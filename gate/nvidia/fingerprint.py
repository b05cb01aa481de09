"""The GPU fingerprint recorded with every run: card, driver, toolkit, clocks and profiler (absolute
times and profiler ratios compare only between equal ones). A failed probe leaves its field empty.
"""

from __future__ import annotations

import os
import socket

from gate.domain import Fingerprint
from gate.nvidia import ncu_cli
from gate.nvidia.tools import tool_output


def parse_smi_clocks(text: str) -> tuple[int | None, int | None]:
    """First line of `nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits`."""
    line = text.splitlines()[0] if text else ""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None, None
    return int(parts[0]), int(parts[1])


def collect(ncu_path: str = "ncu") -> Fingerprint:
    """Probe torch, nvidia-smi and ncu for the current CUDA device, right after the timed work (the
    clocks are read now: working clocks, not idle)."""
    fp = Fingerprint(host=socket.gethostname(), ncu_version=ncu_cli.version(ncu_path))
    try:
        import torch
    except ImportError:
        return fp
    fp.torch = torch.__version__
    fp.cuda = str(torch.version.cuda or "")
    if not torch.cuda.is_available():
        return fp
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    fp.gpu_name = props.name
    fp.compute_capability = f"{props.major}.{props.minor}"
    fp.sm_count = props.multi_processor_count
    # nvidia-smi's id of that device: CUDA_VISIBLE_DEVICES's entry for it (a slot's child: its UUID)
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    query = ["nvidia-smi", f"--id={visible[index] if index < len(visible) else index}", "--format=csv,noheader,nounits"]
    fp.driver = next(iter(tool_output([*query, "--query-gpu=driver_version"]).splitlines()), "")
    fp.sm_clock_mhz, fp.mem_clock_mhz = parse_smi_clocks(tool_output([*query, "--query-gpu=clocks.sm,clocks.mem"]))
    return fp
