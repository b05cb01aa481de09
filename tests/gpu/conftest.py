"""GPU tests: even when asked for (`-m gpu`), skipped with the reason when CUDA is absent.

Run with pytest-xdist (`-n N`) on a machine with several GPUs, each worker takes one GPU of those
CUDA_VISIBLE_DEVICES leaves (all, where it is unset) and sees it alone, as a slot's child does: the
files run side by side, one GPU each, and no two tests time their kernels on one GPU."""

import os

import pytest

from gate.nvidia.devices import slot_gpus


def _one_gpu_per_worker() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")       # gw0, gw1, ...
    if worker.startswith("gw") and (gpus := slot_gpus()):
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[int(worker[2:]) % len(gpus)].uuid


_one_gpu_per_worker()       # before anything makes a CUDA context in this worker


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    try:
        import torch

        reason = None if torch.cuda.is_available() else "no CUDA device visible to torch"
    except ImportError:
        reason = "torch is not installed"
    if reason:
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def torch():
    """torch with a CUDA device, for the GPU tests that call it directly; skips without one."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    return torch
