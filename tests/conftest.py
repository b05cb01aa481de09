"""Shared test settings. GPU tests run only with `-m gpu` on a machine with CUDA."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = config.getoption("-m") or ""
    if "gpu" in markexpr:
        return
    skip = pytest.mark.skip(reason="GPU test: run on the device machine with `-m gpu`")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ncu_fixture() -> Callable[[str], Path]:
    """Path of a recorded .ncu-rep: the shared fixtures beside the repo (`../shared/fixtures`),
    else the committed copy in tests/fixtures/ncu; skips, saying where it looked, if neither has it."""

    def find(name: str) -> Path:
        for folder in (REPO_ROOT.parent / "shared" / "fixtures", REPO_ROOT / "tests" / "fixtures" / "ncu"):
            if (folder / name).is_file():
                return folder / name
        pytest.skip(f"{name} is neither in ../shared/fixtures nor in tests/fixtures/ncu")

    return find
