"""Shared test settings. GPU tests run only with `-m gpu` on a machine with CUDA."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = config.getoption("-m") or ""
    if "gpu" in markexpr:
        return
    skip = pytest.mark.skip(reason="GPU test: run on the device machine with `-m gpu`")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
