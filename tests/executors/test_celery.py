"""The Celery executor against the real Redis on loopback, with a worker thread and a fake pipeline."""

import time
import uuid

import pytest
from service_fakes import FakePipeline, FakeSources
from sqlalchemy import func, select

from gate.domain.job import RunOptions
from gate.executors.base import JobEnvironment
from gate.executors.celery import CeleryExecutor, queue_name
from gate.services.submissions import plan_revision, submit_revision
from gate.storage.models import Job, VerdictRecord

BROKER = "redis://127.0.0.1:6379/0"


def test_queue_names_are_broker_safe():
    assert queue_name("NVIDIA H100 80GB HBM3") == "gate.nvidia-h100-80gb-hbm3"
    assert queue_name("any") == "gate.any"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_jobs_run_on_a_celery_worker_once_even_if_sent_twice(session_factory, tmp_path):
    from celery.contrib.testing.worker import start_worker

    kind = f"test-{uuid.uuid4().hex[:8]}"   # a queue of our own on the shared Redis
    with session_factory() as s:
        rev = submit_revision(s, repo="/src/flash", sha="HEAD")
        jobs = plan_revision(s, rev, sources=FakeSources(kernels=("fwd", "bwd"))).jobs
        for job in jobs:
            job.gpu_kind = kind
        s.commit()
        job_ids = [j.id for j in jobs]
    pipeline = FakePipeline(raise_for={"bwd"})
    env = JobEnvironment(session_factory=session_factory, gate_job=pipeline, data_dir=tmp_path, options=RunOptions())
    executor = CeleryExecutor(env, BROKER, worker_name="celery@test")
    executor.start()                                    # sends both jobs
    executor.task.apply_async(args=[job_ids[0]], queue=queue_name(kind))   # a redelivered duplicate
    with start_worker(executor.app, pool="solo", concurrency=1, perform_ping_check=False,
                      queues=[queue_name(kind)], shutdown_timeout=30):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with session_factory() as s:
                if all(s.get(Job, j).state == "done" for j in job_ids) and len(pipeline.calls) >= 2:
                    time.sleep(0.5)   # give the duplicate message time to be (not) run
                    break
            time.sleep(0.1)
    assert sorted(c["kernel"] for c in pipeline.calls) == ["bwd", "fwd"]
    with session_factory() as s:
        assert s.scalar(select(func.count()).select_from(VerdictRecord)) == 2
        verdicts = {s.get(Job, j).kernel: s.get(Job, j).verdict.verdict for j in job_ids}
        assert verdicts == {"fwd": "accept", "bwd": "error"}
        assert {s.get(Job, j).worker for j in job_ids} == {"celery@test"}
