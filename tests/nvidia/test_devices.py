"""This host's GPUs as nvidia-smi and the driver show them (`gate.nvidia.devices`), with stand-ins
for nvidia-smi's answers and for /dev and the driver's /proc records."""

import pytest

from gate.errors import GateError
from gate.nvidia import devices
from gate.nvidia.devices import Gpu

SMI = ("0, GPU-5f2a7c10-0000-0000-0000-000000000000, 00000000:19:00.0, 580.95.05, NVIDIA H200\n"
       "1, GPU-9b1e4d22-0000-0000-0000-000000000000, 00000000:3B:00.0, 580.95.05, NVIDIA H200\n")
H200_0 = Gpu(0, "GPU-5f2a7c10-0000-0000-0000-000000000000", "NVIDIA H200", "00000000:19:00.0", "580.95.05")
H200_1 = Gpu(1, "GPU-9b1e4d22-0000-0000-0000-000000000000", "NVIDIA H200", "00000000:3B:00.0", "580.95.05")


def answering(monkeypatch, text: str) -> list[list[str]]:
    asked: list[list[str]] = []
    monkeypatch.setattr(devices, "tool_output", lambda command: asked.append(command) or text)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return asked


def test_the_gpus_are_listed_with_index_uuid_and_name(monkeypatch):
    asked = answering(monkeypatch, SMI)
    assert devices.list_gpus() == [H200_0, H200_1]
    assert asked == [["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,driver_version,name", "--format=csv,noheader"]]


@pytest.mark.parametrize("wanted, visible, slots", [
    (None, None, [H200_0, H200_1]),                        # every GPU
    (None, "1", [H200_1]),                                  # CUDA_VISIBLE_DEVICES narrows them
    (None, "GPU-9b1e4d22,0", [H200_1, H200_0]),             # by a UUID's prefix too, in its order
    (None, "", []),                                         # set and empty: none
    (["1"], "0", [H200_1]),                                 # `gate worker --gpu` wins
    (["GPU-5f2a7c10-0000-0000-0000-000000000000", "1"], None, [H200_0, H200_1]),
])
def test_the_slots_are_the_gpus_asked_for_else_the_visible_ones(wanted, visible, slots, monkeypatch):
    answering(monkeypatch, SMI)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert devices.slot_gpus(wanted) == slots


def test_a_gpu_the_host_lacks_is_refused_naming_those_it_has(monkeypatch):
    answering(monkeypatch, SMI)
    with pytest.raises(GateError, match=r"no GPU '7' on this host \(nvidia-smi lists: GPU 0 \(GPU-5f2a"):
        devices.slot_gpus(["7"])


def test_the_cores_near_a_gpu_come_from_its_pci_devices_local_cpulist(tmp_path, monkeypatch):
    (tmp_path / "0000:3b:00.0").mkdir()
    (tmp_path / "0000:3b:00.0" / "local_cpulist").write_text("2-4,7\n")
    monkeypatch.setattr(devices, "SYS_PCI", tmp_path)
    monkeypatch.setattr(devices.os, "sched_getaffinity", lambda _pid: set(range(8)))
    assert devices.near_cpus(H200_1) == [2, 3, 4, 7]
    assert devices.near_cpus(H200_0) == []                  # the host does not say
    monkeypatch.setattr(devices.os, "sched_getaffinity", lambda _pid: {2, 3, 4, 7})
    assert devices.near_cpus(H200_1) == []                  # every core it may use: no pinning


def test_the_other_gpus_load_is_read_by_uuid(monkeypatch):
    answering(monkeypatch, "GPU-a, 97\nGPU-b, 0\nGPU-c, [N/A]\n")
    assert devices.utilisation() == {"GPU-a": 97, "GPU-b": 0}


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
