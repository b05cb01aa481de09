"""Issue 42 on the GPU: a slot's child, boxed with its GPU's node and the shared ones alone and its
UUID in CUDA_VISIBLE_DEVICES, sees exactly that GPU: through CUDA (torch), through NVML by UUID (the
GPU watch and the clock lock) and through nvidia-smi (the fingerprint). On a machine with several
GPUs it takes the last one, so that "device 0" would be the wrong answer."""

import json
import sys
import textwrap

import pytest

from gate.domain import KernelSpec
from gate.domain.job import Checkout, JobRequest
from gate.executors.child import run_child
from gate.nvidia.devices import list_gpus

pytestmark = pytest.mark.gpu

PROBE = textwrap.dedent("""
    import json, os, torch
    from gate.nvidia import fingerprint, gpu_watch
    nvml = gpu_watch.import_nvml()
    nvml.nvmlInit()
    handle = gpu_watch.device_handle(nvml)
    uuid = nvml.nvmlDeviceGetUUID(handle)
    x = torch.randn(1024, 1024, device="cuda")
    seen = {"count": torch.cuda.device_count(), "sum_finite": bool((x @ x).sum().isfinite()),
            "nvml_uuid": uuid if isinstance(uuid, str) else uuid.decode(),
            "driver": fingerprint.collect("ncu").driver,
            "nodes": sorted(n for n in os.listdir("/dev") if "nvidia" in n)}
    json.dump({"kernel": "k", "candidate": {"sha": "c"}, "notes": ["probe " + json.dumps(seen)]},
              open("result.json", "w"))
""")


def test_a_slots_child_sees_its_gpu_alone(tmp_path):
    gpus = list_gpus()
    if not gpus:
        pytest.skip("nvidia-smi lists no GPU")
    gpu = gpus[-1]
    (tmp_path / "checkout").mkdir()
    request = JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]),
                         candidate=Checkout("c" * 40, str(tmp_path / "checkout")), artifacts_dir=str(tmp_path / "art"))
    result = run_child(request, 300, None, command=[sys.executable, "-c", PROBE], gpu=gpu)
    print(result.notes)
    seen = json.loads(next(n for n in result.notes if n.startswith("probe ")).removeprefix("probe "))
    assert (seen["count"], seen["sum_finite"], seen["nvml_uuid"]) == (1, True, gpu.uuid)
    assert seen["driver"] == gpu.driver
    gpu_nodes = [n for n in seen["nodes"] if n[len("nvidia"):].isdigit()]
    assert len(gpu_nodes) == 1 and "nvidiactl" in seen["nodes"]
    assert any(n.startswith(f"slot: GPU {gpu.index} ({gpu.uuid}") for n in result.notes)
