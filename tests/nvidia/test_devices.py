"""This host's GPUs as nvidia-smi and the driver show them (`gate.nvidia.devices`), with stand-ins
for nvidia-smi's answers and for /dev and the driver's /proc records."""

import pytest

from gate.nvidia import devices
from gate.nvidia.devices import Gpu

SMI = ("0, GPU-5f2a7c10-0000-0000-0000-000000000000, NVIDIA H200\n"
       "1, GPU-9b1e4d22-0000-0000-0000-000000000000, NVIDIA H200\n")


def answering(monkeypatch, text: str) -> list[list[str]]:
    asked: list[list[str]] = []
    monkeypatch.setattr(devices, "tool_output", lambda command: asked.append(command) or text)
    return asked


def test_the_gpus_are_listed_with_index_uuid_and_name(monkeypatch):
    asked = answering(monkeypatch, SMI)
    assert devices.list_gpus() == [Gpu(0, "GPU-5f2a7c10-0000-0000-0000-000000000000", "NVIDIA H200"),
                                   Gpu(1, "GPU-9b1e4d22-0000-0000-0000-000000000000", "NVIDIA H200")]
    assert asked == [["nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"]]


def test_without_nvidia_smi_there_is_no_gpu(monkeypatch):
    answering(monkeypatch, "")
    assert devices.list_gpus() == []


@pytest.mark.parametrize("smi, arch", [("9.0", "sm_90"), ("9.0\n9.0", "sm_90"), ("8.0\n9.0", ""), ("", "")])
def test_the_arch_comes_from_nvidia_smi_only_when_every_gpu_agrees(smi, arch, monkeypatch):
    answering(monkeypatch, smi)
    assert devices.common_arch() == arch


def test_the_visible_gpus_follow_cuda_visible_devices(monkeypatch):
    asked = answering(monkeypatch, "NVIDIA H200, 570.86")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert devices.visible_gpus() == "NVIDIA H200, 570.86"
    assert asked[0][-1] == "--id=1"


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A /dev with two GPUs' nodes and the shared ones, and the driver's records, where the second
    GPU in nvidia-smi's order has minor number 0 (the PCI order and the driver's differ)."""
    dev, proc = tmp_path / "dev", tmp_path / "proc"
    for node in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "null"):
        (dev / node).parent.mkdir(parents=True, exist_ok=True)
        (dev / node).touch()
    for bus, uuid, minor in (("0000:19:00.0", "GPU-a", 1), ("0000:3b:00.0", "GPU-b", 0)):
        (proc / bus).mkdir(parents=True)
        (proc / bus / "information").write_text(f"Model: \t\t NVIDIA H200\nGPU UUID: \t {uuid}\n"
                                                f"Bus Location: \t {bus}\nDevice Minor: \t {minor}\n")
    monkeypatch.setattr(devices, "DEV", dev)
    monkeypatch.setattr(devices, "PROC_GPUS", proc)
    return dev


def test_a_box_for_every_gpu_gets_every_nvidia_node(host):
    assert devices.device_nodes() == [str(host / n) for n in
                                      ("nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidiactl")]
    assert devices.gpu_nodes()


def test_a_box_for_one_gpu_gets_its_own_node_by_uuid_and_the_shared_ones(host):
    assert devices.device_nodes(Gpu(0, "GPU-a", "NVIDIA H200")) == [
        str(host / n) for n in ("nvidia-uvm", "nvidia-uvm-tools", "nvidia1", "nvidiactl")]


def test_without_the_drivers_record_a_gpus_node_is_its_index(host):
    assert str(host / "nvidia1") in devices.device_nodes(Gpu(1, "GPU-unknown", "NVIDIA H200"))
    assert str(host / "nvidia0") not in devices.device_nodes(Gpu(1, "GPU-unknown", "NVIDIA H200"))


def test_a_machine_without_nodes_has_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "DEV", tmp_path)
    assert devices.device_nodes() == [] and not devices.gpu_nodes()
