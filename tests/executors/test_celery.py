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
from gate.storage.models import Job, Revision, VerdictRecord
from gate.storage.unit import Store, UnitOfWork
from tests.patience import HANG_S

BROKER = "redis://127.0.0.1:6379/0"


def test_queue_names_are_broker_safe():
    assert queue_name("NVIDIA H100 80GB HBM3") == "gate.nvidia-h100-80gb-hbm3"
    assert queue_name("any") == "gate.any"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_jobs_run_on_a_celery_worker_once_even_if_sent_twice(session_factory, tmp_path):
    from celery.contrib.testing.worker import start_worker

    kind = f"test-{uuid.uuid4().hex[:8]}"   # a queue of our own on the shared Redis
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")
        plan_revision(UnitOfWork(s), rev_id, sources=FakeSources(kernels=("fwd", "bwd")))
        jobs = s.get(Revision, rev_id).jobs
        for job in jobs:
            job.gpu_kind = kind
        s.commit()
        job_ids = [j.id for j in jobs]
    pipeline = FakePipeline(raise_for={"bwd"})
    env = JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=pipeline, data_dir=tmp_path,
                         options=RunOptions())
    executor = CeleryExecutor(env, BROKER, worker_name="celery@test")
    executor.start()                                    # sends both jobs
    executor.task.apply_async(args=[job_ids[0]], queue=queue_name(kind))   # a redelivered duplicate
    with start_worker(executor.app, pool="solo", concurrency=1, perform_ping_check=False,
                      queues=[queue_name(kind)], shutdown_timeout=30):
        deadline = time.monotonic() + HANG_S
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


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("where", ["this host", "another host"])
def test_a_worker_killed_mid_job_has_its_job_run_elsewhere_once_without_a_restart(session_factory, database_url,
                                                                                tmp_path, where):
    """Issue 12: a SIGKILLed worker left its job `running` until the server restarted. With the sweeper
    (stale after 3 s, swept every 0.5 s) another worker runs it; one verdict, within the bound. On the
    worker's own host its vanished process gives it away at once; from elsewhere only the silence does."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from gate.executors.liveness import OrphanSweeper

    kind = f"test-{uuid.uuid4().hex[:8]}"
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")
        plan_revision(UnitOfWork(s), rev_id, sources=FakeSources(kernels=("fwd",)))
        (job,) = s.get(Revision, rev_id).jobs
        job.gpu_kind = kind
        s.commit()
        job_id = job.id
    env = JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=FakePipeline(), data_dir=tmp_path,
                         options=RunOptions())
    server = CeleryExecutor(env, BROKER)
    server.sweeper = OrphanSweeper(Store(session_factory.kw["bind"]), server.resend, sweep_s=0.5, stale_after_s=3,
                                   **({} if where == "this host" else {"dead_worker": lambda _worker: False}))
    tests_dir = Path(__file__).resolve().parent.parent
    child_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests_dir.parent), str(tests_dir)])}

    def worker(mode: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(Path(__file__).parent / "celery_worker_process.py"),
                                 database_url, kind, mode, str(tmp_path)], env=child_env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def job_row():
        with session_factory() as s:
            row = s.get(Job, job_id)
            return row.state, row.worker, row.attempts

    server.start()
    first = worker("hang")
    second = None
    try:
        deadline = time.monotonic() + HANG_S
        while job_row()[0] != "running" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert job_row()[0] == "running"
        first_worker = job_row()[1]
        # The other worker is already up, as a pool's would be: how long a Python process takes to
        # start is the machine's (over 15 s on 2 busy cores), not the sweeper's, so it stays out of the bound.
        second = worker("run")
        deadline = time.monotonic() + HANG_S
        while not (tmp_path / f"worker-{second.pid}.ready").exists() and time.monotonic() < deadline:
            assert second.poll() is None, "the second worker exited"
            time.sleep(0.1)
        assert (tmp_path / f"worker-{second.pid}.ready").exists()
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        killed_at = time.monotonic()
        with session_factory() as s:
            last_beat = s.get(Job, job_id).heartbeat_at     # the dead worker's, up to 0.5 s before the kill
        while job_row()[0] != "done" and time.monotonic() < killed_at + HANG_S:
            time.sleep(0.1)
        elapsed_s = time.monotonic() - killed_at
        print(f"{where}: job {job_id} ran again {elapsed_s:.1f} s after the SIGKILL")
        time.sleep(1.0)                              # a stray copy of the message would show up by now
        state, last_worker, attempts = job_row()
        assert state == "done" and attempts == 2
        assert last_worker != first_worker           # unique ids: the pid is part of each
        # Done on the second attempt with neither worker restarted: the sweeper re-queued it and the
        # waiting worker took it. How soon is the machine's (the print above), bounded only by HANG_S.
        with session_factory() as s:
            rerun_at = s.get(Job, job_id).started_at        # the second attempt's claim
        # from elsewhere: only once the heartbeat is stale, counted from the last beat (not the kill)
        assert where == "this host" or (rerun_at - last_beat).total_seconds() >= 3
        with session_factory() as s:
            assert s.scalar(select(func.count()).select_from(VerdictRecord)) == 1
            assert s.get(Job, job_id).verdict.verdict == "accept"
    finally:
        server.stop()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_celery_worker_per_gpu_runs_each_job_once_on_its_own_gpu(session_factory, database_url, tmp_path):
    """Issue 42: `gate worker --gpu 0` and `gate worker --gpu 1` (GATE_EXECUTOR=celery) on a host with
    two GPUs (a stand-in nvidia-smi) against one Redis and one database: every job runs once, on one
    worker, which records its GPU; both GPUs take jobs."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.fakes.gpu_host import GPUS, write_nvidia_smi

    kind = f"test-{uuid.uuid4().hex[:8]}"
    broker = "redis://127.0.0.1:6379/11"          # its own database: the workers also consume `gate.any`
    kernels = tuple(f"k{i}" for i in range(6))
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")
        plan_revision(UnitOfWork(s), rev_id, sources=FakeSources(kernels=kernels))
        for job in s.get(Revision, rev_id).jobs:
            job.gpu_kind = kind
        s.commit()
    tests_dir = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PATH": f"{write_nvidia_smi(tmp_path / 'bin').parent}{os.pathsep}{os.environ['PATH']}",
           "GATE_EXECUTOR": "celery", "GATE_BROKER_URL": broker, "GATE_DATABASE_URL": database_url,
           "GATE_DATA_DIR": str(tmp_path / "data"), "GATE_TORCH_PCH": "off", "FLEET_JOB_S": "1",
           "GATE_TEST_PIPELINE": "tests.fakes.fleet_pipeline:gate_job",
           "PYTHONPATH": os.pathsep.join([str(tests_dir.parent), str(tests_dir)])}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    workers = [subprocess.Popen([sys.executable, "-m", "gate.cli", "worker", "--gpu", str(i), "--gpu-kind", kind],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in (0, 1)]
    server = CeleryExecutor(JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=FakePipeline(),
                                           data_dir=tmp_path, options=RunOptions()), broker)
    try:
        deadline = time.monotonic() + 120
        while len(server.app.control.ping(timeout=1)) < 2 and time.monotonic() < deadline:
            assert all(w.poll() is None for w in workers), "a worker exited"
        server.start()
        while time.monotonic() < deadline:
            with session_factory() as s:
                if all(j.state == "done" for j in s.get(Revision, rev_id).jobs):
                    break
            time.sleep(0.2)
        time.sleep(1.0)                                   # a stray second run would show up by now
        with session_factory() as s:
            jobs = s.get(Revision, rev_id).jobs
            assert all((j.state, j.attempts) == ("done", 1) for j in jobs)
            assert s.scalar(select(func.count()).select_from(VerdictRecord)) == len(kernels)
            ran = {j.kernel: (j.gpu_index, j.gpu_uuid, j.worker) for j in jobs}
    finally:
        server.stop()
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=60)
    assert {(index, uuid_) for index, uuid_, _ in ran.values()} == {(0, GPUS[0][1]), (1, GPUS[1][1])}
    for index, _, worker in ran.values():
        assert worker.endswith(f":gpu{index}")           # the worker of that GPU ran it
    with session_factory() as s:
        for job in s.get(Revision, rev_id).jobs:
            assert job.verdict.reason == f"accept: correctness: ran on GPU {job.gpu_index}"
