"""Fixtures of the pipeline tests that more than one module uses."""

import os
from pathlib import Path

import pytest


@pytest.fixture
def side_host_env(tmp_path, monkeypatch) -> Path:
    """A side host started now can import `side_host_fakes` (`--backend side_host_fakes.BACKEND`) and
    logs its calls to the returned file."""
    log = tmp_path / "fake-side.log"
    here = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_SIDE_LOG", str(log))
    return log
