"""GPU tests: registers the `gpu` marker and skips them (with the reason) when CUDA is absent."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (run on the device machine)")


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
