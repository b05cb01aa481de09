"""The pipeline `gate serve` runs in these tests (GATE_TEST_PIPELINE=attack_pipeline:judged): the
service's fake, which judges every job `accept` at once, so an attack meets a server that really
plans, runs and stores jobs without a GPU. Its build log names the job's folder, as a real
compiler's does, so the tests can check that no answer shows it."""

from __future__ import annotations

from pathlib import Path

from gate.domain.job import JobOrder
from gate.executors.job import JobContext
from tests.service_fakes import FakePipeline

_fake = FakePipeline()


def judged(order: JobOrder, context: JobContext):  # noqa: ANN201 (a gate_job)
    outcome = _fake(order, context)
    work = Path(context.data_dir).resolve()
    with open(work / "build.log", "a") as log:
        log.write(f"nvcc -c {work}/attn.cu -o {work}/attn.o\n")
    return outcome
