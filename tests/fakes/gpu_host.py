"""A host with two GPUs on a CPU machine: a stand-in `nvidia-smi` (an executable that answers the
gate's `--query-gpu` questions) and, for the box, a stand-in /dev with each GPU's node and the shared
ones, the driver's /proc records and sysfs's `local_cpulist` (`gate.nvidia.devices` reads them
through `DEV`, `PROC_GPUS` and `SYS_PCI`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

# index, uuid, PCI bus id, driver, name: the driver numbers the nodes in the other order (minor 1 for
# GPU 0), as a host whose PCI order and the driver's differ does.
GPUS = (("0", "GPU-0a0a0a0a-1111-2222-3333-444444444444", "00000000:19:00.0", "580.95.05", "NVIDIA H200", 1),
        ("1", "GPU-1b1b1b1b-1111-2222-3333-444444444444", "00000000:3B:00.0", "580.95.05", "NVIDIA H200", 0))
SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")

_SMI = '''#!{python}
import sys
rows = {rows!r}
args = sys.argv[1:]
fields = next(a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")).split(",")
wanted = next((a.split("=", 1)[1] for a in args if a.startswith("--id=")), "")
for row in rows:
    if not wanted or wanted in (row["index"], row["uuid"]):
        print(", ".join(row[f] for f in fields))
'''


@dataclass
class GpuHost:
    bin: Path           # put first on PATH: its nvidia-smi answers for the two GPUs
    dev: Path           # the stand-in /dev
    uuids: tuple[str, ...]

    def node(self, name: str) -> str:
        return str(self.dev / name)

    def env(self) -> dict[str, str]:
        """os.environ with the stand-in nvidia-smi first on PATH (for a process of its own)."""
        return {**os.environ, "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def write_nvidia_smi(folder: Path, busy_pct: int = 0) -> Path:
    """An executable `nvidia-smi` in `folder` answering for `GPUS`."""
    rows = [{"index": i, "uuid": u, "pci.bus_id": bus, "driver_version": driver, "name": name,
             "compute_cap": "9.0", "utilization.gpu": str(busy_pct)} for i, u, bus, driver, name, _ in GPUS]
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(_SMI.format(python=sys.executable, rows=rows))
    smi.chmod(0o755)
    return smi


def two_gpu_host(tmp_path: Path, monkeypatch) -> GpuHost:  # noqa: ANN001 (pytest's MonkeyPatch)
    """This process made to see `GPUS`: nvidia-smi on PATH, /dev, /proc and sysfs stand-ins (GPU 0
    near core 0, GPU 1 near the rest, where the machine has more than one)."""
    from gate.nvidia import devices

    bin_dir, dev, proc, sys_pci = (tmp_path / f"host-{name}" for name in ("bin", "dev", "proc", "sys"))
    write_nvidia_smi(bin_dir)
    dev.mkdir()
    for _, uuid, bus, _, _, minor in GPUS:
        (dev / f"nvidia{minor}").write_text("")
        record = proc / bus.lower()[4:]
        record.mkdir(parents=True)
        (record / "information").write_text(f"GPU UUID: \t {uuid}\nDevice Minor: \t {minor}\n")
    for name in SHARED_NODES:
        (dev / name).write_text("")
    cores = sorted(os.sched_getaffinity(0))
    for (_, _, bus, _, _, _), near in zip(GPUS, (cores[:1], cores[1:] or cores)):
        pci = sys_pci / f"0000:{bus.lower()[9:]}"
        pci.mkdir(parents=True)
        (pci / "local_cpulist").write_text(",".join(map(str, near)) + "\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(devices, "DEV", dev)
    monkeypatch.setattr(devices, "PROC_GPUS", proc)
    monkeypatch.setattr(devices, "SYS_PCI", sys_pci)
    return GpuHost(bin_dir, dev, tuple(g[1] for g in GPUS))
