"""The worker image pins the toolchain the GPU evidence is measured with: on the device, the CUDA
compiler, Nsight Compute and torch that measure must be the versions docker/Dockerfile.worker
installs and checks. A mismatch means one of the two moved: update the image's pins, or say in the
README which versions the figures come from."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

DOCKERFILE = Path(__file__).resolve().parents[2] / "docker" / "Dockerfile.worker"


def _pinned() -> dict[str, str]:
    text = DOCKERFILE.read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    nvcc = re.search(r'release (\d+\.\d+), V([\d.]+)', text)
    assert nvcc, "Dockerfile.worker checks no nvcc release"
    return {"ncu": args["NCU_VERSION"], "torch": args["TORCH_VERSION"], "cuda": nvcc.group(1),
            "nvcc": nvcc.group(2)}


def _version_line(tool: str) -> str:
    path = shutil.which(tool) or str(Path("/usr/local/cuda/bin") / tool)
    return subprocess.run([path, "--version"], capture_output=True, text=True, check=True, timeout=60).stdout


def test_the_device_measures_with_the_versions_the_worker_image_pins():
    import torch

    pinned = _pinned()
    assert f"release {pinned['cuda']}, V{pinned['nvcc']}" in _version_line("nvcc")
    assert f"Version {pinned['ncu']}" in _version_line("ncu")
    assert torch.__version__.split("+")[0] == pinned["torch"]
    assert torch.version.cuda == pinned["cuda"]
