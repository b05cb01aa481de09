"""GPU tests: even when asked for (`-m gpu`), skipped with the reason when CUDA is absent."""

import pytest


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
