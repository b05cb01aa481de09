"""This host's NVIDIA GPUs as nvidia-smi and the driver show them, without torch: the list, their
common arch, and the `/dev/nvidia*` nodes a box binds (for every GPU, or one: its own node, by its
UUID in the driver's /proc records, and the shared ones). [] or "" on a machine without a driver."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from gate.nvidia.ncu_catalog import arch_of
from gate.nvidia.tools import tool_output

DEV = Path("/dev")
PROC_GPUS = Path("/proc/driver/nvidia/gpus")
# A GPU's own node, /dev/nvidia<minor>; every other /dev/nvidia* node (nvidiactl, nvidia-uvm,
# nvidia-uvm-tools, nvidia-modeset, nvidia-caps/) serves all of them.
_GPU_NODE = re.compile(r"nvidia(\d+)$")


@dataclass(frozen=True)
class Gpu:
    index: int              # nvidia-smi's (and NVML's) index; CUDA_VISIBLE_DEVICES takes it too
    uuid: str               # GPU-xxxxxxxx-...: stable across reboots and renumbering
    name: str               # NVIDIA H200


def list_gpus() -> list[Gpu]:
    """This host's GPUs, in nvidia-smi's order; [] without nvidia-smi or a driver."""
    gpus = []
    for line in tool_output(["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"]).splitlines():
        index, uuid, name = (part.strip() for part in line.split(",", 2))
        if index.isdigit():
            gpus.append(Gpu(int(index), uuid, name))
    return gpus


def gpu_nodes() -> bool:
    """Whether this machine has NVIDIA GPU device nodes (`/dev/nvidia0`, ...): what a box with `gpu`
    is given, and what tells a CPU machine, which starts nothing for the GPU ahead of a job."""
    return any(DEV.glob("nvidia[0-9]*"))


def device_nodes(gpu: Gpu | None = None) -> list[str]:
    """The device nodes a box binds for `gpu` (None: every GPU of the host), sorted."""
    nodes = sorted(str(p) for p in DEV.glob("nvidia*"))
    if gpu is None:
        return nodes
    minor = _minor(gpu)
    return [n for n in nodes if (m := _GPU_NODE.search(n)) is None or int(m.group(1)) == minor]


def _minor(gpu: Gpu) -> int:
    """The minor number of `gpu`'s node: the driver's record with its UUID; its index where the
    driver keeps none (the two agree unless the PCI order and the driver's order differ)."""
    for info in sorted(PROC_GPUS.glob("*/information")):
        try:
            text = info.read_text()
        except OSError:
            continue
        uuid = re.search(r"^GPU UUID:\s*(\S+)", text, re.M)
        minor = re.search(r"^Device Minor:\s*(\d+)", text, re.M)
        if uuid and minor and uuid.group(1) == gpu.uuid:
            return int(minor.group(1))
    return gpu.index


def common_arch() -> str:
    """The GPUs' arch as nvidia-smi reports it, for work started before the child has imported
    torch: "" when nvidia-smi is absent or says nothing, and when the machine's GPUs differ (which
    one torch will use is then torch's to say)."""
    caps = set(tool_output(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]).split())
    match = re.fullmatch(r"(\d+)\.(\d+)", caps.pop()) if len(caps) == 1 else None
    return arch_of(int(match.group(1)), int(match.group(2))) if match else ""


def visible_gpus() -> str:
    """Name and driver of the GPUs a child would see ('' without a GPU). `CUDA_VISIBLE_DEVICES`
    narrows it as it narrows the child's devices (nvidia-smi takes the same indices and UUIDs)."""
    query = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if visible:
        query.append(f"--id={visible}")
    return tool_output(query)
