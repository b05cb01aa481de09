"""A pipeline for the `gate serve` end-to-end test, loaded through GATE_TEST_PIPELINE (a test seam).

Each call appends a line to $GATE_E2E_CALLS; while the file $GATE_E2E_HOLD exists the job waits, so
the test can kill the server in the middle of it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from service_fakes import FakePipeline

from gate.domain.job import JobOrder, ProgressEvent
from gate.executors.job import JobContext


def slow_gate_job(order: JobOrder, context: JobContext):  # noqa: ANN201
    with open(os.environ["GATE_E2E_CALLS"], "a") as calls:
        calls.write(f"{os.getpid()} {order.kernel} {order.sha}\n")
    hold = Path(os.environ["GATE_E2E_HOLD"])
    context.on_event(ProgressEvent(stage="bench", side="joint", state="started"))
    deadline = time.monotonic() + 120
    while hold.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return FakePipeline()(order, context)
