"""A pipeline for the `gate serve` end-to-end test, loaded through GATE_TEST_PIPELINE (a test seam).

Each call appends a line to $GATE_E2E_CALLS; while the file $GATE_E2E_HOLD exists the job waits, so
the test can kill the server in the middle of it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from service_fakes import FakePipeline


def slow_gate_job(**kwargs):  # noqa: ANN003, ANN201
    with open(os.environ["GATE_E2E_CALLS"], "a") as calls:
        calls.write(f"{os.getpid()} {kwargs['kernel']} {kwargs['sha']}\n")
    hold = Path(os.environ["GATE_E2E_HOLD"])
    kwargs["on_event"](__import__("gate.domain.job", fromlist=["ProgressEvent"]).ProgressEvent(
        stage="bench", side="joint", state="started"))
    deadline = time.monotonic() + 120
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return FakePipeline()(**kwargs)
