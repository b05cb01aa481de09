"""A pipeline for the `gate serve` end-to-end test, loaded through GATE_TEST_PIPELINE (a test seam).

`slow_gate_job`: each call appends a line to $GATE_E2E_CALLS; while the file $GATE_E2E_HOLD exists
the job waits, so the test can kill the server in the middle of it. `commit_timed_gate_job`: the
candidate's latency is the one $GATE_E2E_LATENCY (a JSON file: sha -> microseconds) names for the
commit, so a history's order can be read off its values.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

from service_fakes import FakePipeline, timing

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


def commit_timed_gate_job(order: JobOrder, context: JobContext):  # noqa: ANN201
    outcome = FakePipeline()(order, context)
    latency_us = json.loads(Path(os.environ["GATE_E2E_LATENCY"]).read_text())[order.sha]
    bench = outcome.result.bench
    shapes = [replace(shape, candidate=timing(latency_us)) for shape in bench.shapes]
    return replace(outcome, result=replace(outcome.result, bench=replace(bench, shapes=shapes)))
