"""This host's NVIDIA GPUs as nvidia-smi, the driver and sysfs show them, without torch: the list, the
slots, the common arch, the device nodes a box binds, the cores near a GPU. [] or "" without a driver."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from gate.errors import GateError
from gate.nvidia.ncu_catalog import arch_of
from gate.nvidia.tools import tool_output

DEV = Path("/dev")
PROC_GPUS = Path("/proc/driver/nvidia/gpus")
SYS_PCI = Path("/sys/bus/pci/devices")
# A GPU's own node, /dev/nvidia<minor>; every other /dev/nvidia* node (nvidiactl, nvidia-uvm,
# nvidia-uvm-tools, nvidia-modeset, nvidia-caps/) serves all of them.
_GPU_NODE = re.compile(r"nvidia(\d+)$")


@dataclass(frozen=True)
class Gpu:
    index: int              # nvidia-smi's (and NVML's) index; CUDA_VISIBLE_DEVICES takes it too
    uuid: str               # GPU-xxxxxxxx-...: stable across reboots and renumbering
    name: str               # NVIDIA H200
    pci_bus_id: str = ""    # 00000000:19:00.0: where sysfs says which CPU cores are near it
    driver: str = ""        # 580.95.05

    def __str__(self) -> str:
        return f"GPU {self.index} ({self.uuid}, {self.name})"


def list_gpus() -> list[Gpu]:
    """This host's GPUs, in nvidia-smi's order; [] without nvidia-smi or a driver."""
    gpus = []
    query = ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,driver_version,name", "--format=csv,noheader"]
    for line in tool_output(query).splitlines():
        index, uuid, bus, driver, name = (part.strip() for part in (line.split(",", 4) + [""] * 4)[:5])
        if index.isdigit():
            gpus.append(Gpu(int(index), uuid, name, bus, driver))
    return gpus


def slot_gpus(wanted: list[str] | None = None) -> list[Gpu]:
    """The GPUs an executor runs jobs on, one slot each: those `wanted` (index or UUID, `gate worker
    --gpu`; a `GateError` naming the host's when absent), else CUDA_VISIBLE_DEVICES's, else all."""
    gpus = list_gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not wanted and visible is None:
        return gpus
    picked: dict[Gpu, None] = {}
    for name in (wanted or [v.strip() for v in (visible or "").split(",")]):
        found = [g for g in gpus if name == str(g.index) or (name.startswith("GPU-") and g.uuid.startswith(name))]
        if not found and wanted:
            raise GateError(f"no GPU {name!r} on this host (nvidia-smi lists: "
                            f"{', '.join(str(g) for g in gpus) or 'none'})")
        picked.update(dict.fromkeys(found))
    return list(picked)


def gpu_nodes() -> bool:
    """Whether this machine has NVIDIA GPU device nodes (`/dev/nvidia0`, ...): a CPU machine has none."""
    return any(DEV.glob("nvidia[0-9]*"))


def device_nodes(gpu: Gpu | None = None) -> list[str]:
    """The device nodes a box binds for `gpu` (None: every GPU of the host), sorted."""
    nodes = sorted(str(p) for p in DEV.glob("nvidia*"))
    if gpu is None:
        return nodes
    minor = _minor(gpu)
    return [n for n in nodes if (m := _GPU_NODE.search(n)) is None or int(m.group(1)) == minor]


def _minor(gpu: Gpu) -> int:
    """The minor number of `gpu`'s node: from the driver's record with its UUID, else its index."""
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


def _visible_query(fields: str, gpu: Gpu | None = None) -> str:
    """nvidia-smi's answer for `gpu`, else for the GPUs of `CUDA_VISIBLE_DEVICES`, else all."""
    query = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"]
    visible = gpu.uuid if gpu is not None else os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return tool_output([*query, f"--id={visible}"] if visible else query)


def common_arch() -> str:
    """The visible GPUs' arch per nvidia-smi, before torch is imported ("" when unknown or they differ)."""
    caps = set(_visible_query("compute_cap").split())
    match = re.fullmatch(r"(\d+)\.(\d+)", caps.pop()) if len(caps) == 1 else None
    return arch_of(int(match.group(1)), int(match.group(2))) if match else ""


def visible_gpus(gpu: Gpu | None = None) -> str:
    """Name and driver of the GPUs a child would see ('' without a GPU)."""
    return _visible_query("name,driver_version", gpu)


def near_cpus(gpu: Gpu) -> list[int]:
    """The CPU cores near `gpu` that this process may use (sysfs `local_cpulist`); [] where the host does
    not say, or names every core (no pinning then separates anything)."""
    domain, _, rest = gpu.pci_bus_id.partition(":")
    try:
        text = (SYS_PCI / f"{int(domain, 16):04x}:{rest.lower()}" / "local_cpulist").read_text()
    except (OSError, ValueError):
        return []
    listed: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        listed.update(range(int(low), int(high or low) + 1))
    allowed = os.sched_getaffinity(0)
    near = sorted(listed & allowed)
    return near if len(near) < len(allowed) else []


def utilisation() -> dict[str, int]:
    """Each GPU's utilisation (%, NVML's last window) by UUID; {} without nvidia-smi."""
    found = {}
    for line in tool_output(["nvidia-smi", "--query-gpu=uuid,utilization.gpu", "--format=csv,noheader,nounits"]
                            ).splitlines():
        uuid, _, pct = (part.strip() for part in line.partition(","))
        if pct.isdigit():
            found[uuid] = int(pct)
    return found
