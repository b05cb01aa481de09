"""The embedded executor: jobs run to stored verdicts, one failure stops nothing, crashes re-run once."""

import os
import socket
import subprocess
import threading
import time

from service_fakes import FakePipeline, FakeSources
from sqlalchemy import func, select

from gate.domain.job import RunOptions
from gate.executors.base import JobEnvironment
from gate.executors.local import LocalExecutor
from gate.notify import Notifier
from gate.services.submissions import plan_revision, submit_revision
from gate.storage.unit import UnitOfWork
from gate.storage import claims
from gate.storage.models import Artifact, Job, JobEvent, Metric, Revision, StageRecord, VerdictRecord
from gate.storage.unit import Store
from tests.patience import HANG_S


def _submit(session_factory, kernels=("attn",)) -> int:
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD")
        assert plan_revision(UnitOfWork(s), rev_id, sources=FakeSources(kernels=kernels)).error is None
        return rev_id


def _executor(session_factory, tmp_path, pipeline, **kw) -> LocalExecutor:
    env = JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=pipeline, data_dir=tmp_path / "data",
                         options=RunOptions(), heartbeat_s=0.05)
    return LocalExecutor(env, gpus=[], poll_s=0.05, **kw)


def test_a_job_runs_to_a_stored_verdict_with_results(session_factory, tmp_path):
    rev_id = _submit(session_factory)
    pipeline = FakePipeline()
    assert _executor(session_factory, tmp_path, pipeline).drain() == 1
    assert pipeline.calls == [{"repo": "/src/flash", "sha": "b" * 40, "base_sha": "a" * 40, "kernel": "attn"}]
    with session_factory() as s:
        (job,) = s.get(Revision, rev_id).jobs
        assert (job.state, job.attempts, job.verdict.verdict) == ("done", 1, "accept")
        assert job.verdict.rules[0]["rule"] == "max_registers"
        assert s.get(Revision, rev_id).status == "done"
        assert s.scalar(select(func.count()).select_from(StageRecord).where(StageRecord.job_id == job.id)) == 3
        assert s.scalar(select(func.count()).select_from(Metric).where(Metric.job_id == job.id)) > 10
        kinds = s.scalars(select(Artifact.kind).where(Artifact.job_id == job.id)).all()
        assert sorted(kinds) == ["build_log", "result"]
        events = s.scalars(select(JobEvent.state).where(JobEvent.job_id == job.id).order_by(JobEvent.id)).all()
        assert events == ["queued", "claimed", "build started", "build passed", "done"]
    assert (tmp_path / "data" / "artifacts" / str(job.id) / "build.log").is_file()


def test_worker_continues_after_a_job_raises(session_factory, tmp_path):
    rev_id = _submit(session_factory, kernels=("bad", "good"))
    assert _executor(session_factory, tmp_path, FakePipeline(raise_for={"bad"})).drain() == 2
    with session_factory() as s:
        bad, good = s.get(Revision, rev_id).jobs
        assert bad.verdict.verdict == "error" and "boom in bad" in bad.verdict.reason
        assert bad.error.startswith("RuntimeError")
        assert good.verdict.verdict == "accept"


def test_job_left_running_by_a_crash_runs_again_exactly_once(session_factory, tmp_path):
    rev_id = _submit(session_factory)
    dead = subprocess.Popen(["true"])
    dead.wait()
    with session_factory() as s:   # the previous server (a process of this host) claimed it, then died
        (job_id, attempt) = claims.Claims(s).claim_next(worker=f"local@{socket.gethostname()}/serve/{dead.pid}:cpu")
    pipeline = FakePipeline()
    executor = _executor(session_factory, tmp_path, pipeline)
    executor.start()
    try:
        deadline = time.monotonic() + HANG_S
        while time.monotonic() < deadline:
            with session_factory() as s:
                if s.get(Job, job_id).state == "done":
                    break
            time.sleep(0.05)
    finally:
        executor.stop()
    assert len(pipeline.calls) == 1
    with session_factory() as s:
        job = s.get(Job, job_id)
        assert (job.state, job.attempts) == ("done", 2)
        assert s.scalar(select(func.count()).select_from(VerdictRecord).where(VerdictRecord.revision_id == rev_id)) == 1
        details = s.scalars(select(JobEvent.detail).where(JobEvent.job_id == job_id, JobEvent.state == "requeued")).all()
        assert len(details) == 1 and details[0].endswith("its worker is gone")


def test_running_job_shows_live_progress_and_heartbeats(session_factory, tmp_path):
    _submit(session_factory)
    hold = threading.Event()
    pipeline = FakePipeline(gate=hold)
    executor = _executor(session_factory, tmp_path, pipeline)
    executor.start()
    try:
        assert pipeline.started.wait(HANG_S)
        time.sleep(0.2)
        with session_factory() as s:
            job = s.scalars(select(Job)).one()
            first_beat = job.heartbeat_at
            assert job.state == "running" and job.progress == "candidate build started"
        time.sleep(0.3)
        with session_factory() as s:
            assert s.scalars(select(Job)).one().heartbeat_at > first_beat
    finally:
        hold.set()
        executor.stop()


def test_two_executors_on_one_host_have_distinct_ids_and_leave_each_others_jobs_alone(session_factory, tmp_path):
    """Issue 12: a second `gate worker` on the host re-queued the first one's live job; both ran it."""
    _submit(session_factory)
    alive = subprocess.Popen(["sleep", "30"])          # the other worker's process, still running
    try:
        with session_factory() as s:
            claims.Claims(s).claim_next(worker=f"local@{socket.gethostname()}/worker-cpu/{alive.pid}:cpu")
        executor = _executor(session_factory, tmp_path, FakePipeline())
        assert executor.recover() == []
        assert executor._slots()[0][0] != f"local@{socket.gethostname()}/worker-cpu/{alive.pid}:cpu"
        assert str(os.getpid()) in executor._slots()[0][0]
    finally:
        alive.kill()
        alive.wait()


def test_another_hosts_running_job_is_left_alone(session_factory, tmp_path):
    _submit(session_factory)
    with session_factory() as s:
        claims.Claims(s).claim_next(worker="local@otherhost/serve:cpu")
    assert _executor(session_factory, tmp_path, FakePipeline()).recover() == []


def test_cancel_kills_the_running_childs_process_group_and_stores_no_verdict(session_factory, tmp_path):
    """Issue 12: "there is no cancel". A job whose GPU child (here a stand-in that starts a
    grandchild and sleeps) runs when its revision is cancelled: the executor kills the child's whole
    process group at once, stores nothing, and takes the next job. Failed before (no cancel)."""
    import sys
    import textwrap

    from gate.domain import KernelSpec
    from gate.domain.job import Checkout, JobRequest
    from gate.executors.child import run_child
    from gate.services.cancellation import cancel
    from tests.executors.test_child import _pids_with_arg, running

    marker = f"gate-cancel-{time.time():.6f}"
    script = textwrap.dedent(f"""
        import json, subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", {marker!r}])
        print(json.dumps({{"type": "progress", "stage": "bench", "side": "joint", "state": "started"}}), flush=True)
        time.sleep(60)
    """)
    started = threading.Event()

    def child_job(order, context):  # noqa: ANN001, ANN202
        request = JobRequest(kernel=KernelSpec(name=order.kernel, sources=["k.cu"]),
                             candidate=Checkout("c" * 40, str(tmp_path)), artifacts_dir=str(context.data_dir / "art"))

        def seen(event):  # noqa: ANN001, ANN202
            context.on_event(event)
            started.set()
        run_child(request, 60, seen, command=[sys.executable, "-c", script], cancel=context.cancel)
        raise AssertionError("the child was not stopped")

    rev_id = _submit(session_factory)
    executor = _executor(session_factory, tmp_path, child_job)
    executor.start()
    try:
        assert started.wait(HANG_S)
        assert _pids_with_arg(marker)
        stopped_at = time.monotonic()
        with session_factory() as s:
            result = cancel(UnitOfWork(s), rev_id, executor, Notifier())
        deadline = time.monotonic() + HANG_S
        while executor._running and time.monotonic() < deadline:
            time.sleep(0.02)
        took_s = time.monotonic() - stopped_at
        assert not executor._running and took_s < 60 / 2     # the child sleeps 60 s unless it is stopped
        assert not [pid for pid in _pids_with_arg(marker) if running(pid)]
    finally:
        executor.stop()
    with session_factory() as s:
        (job,) = s.get(Revision, rev_id).jobs
        assert result.job_ids == [job.id]
        assert (s.get(Revision, rev_id).status, job.state, job.verdict) == ("cancelled", "cancelled", None)


def test_a_worker_that_finds_its_job_cancelled_at_a_heartbeat_stops_it(session_factory, tmp_path):
    """Another process cancelled the job (Celery, `gate worker`): the heartbeat tells the worker."""
    from gate.storage.cancellation import Cancellation

    rev_id = _submit(session_factory)
    pipeline = FakePipeline(gate=threading.Event())          # holds the job until cancelled
    executor = _executor(session_factory, tmp_path, pipeline)   # heartbeat every 0.05 s
    executor.start()
    try:
        assert pipeline.started.wait(HANG_S)
        with session_factory() as s:
            Cancellation(s).cancel_revision(rev_id)          # in storage only: no executor told
        deadline = time.monotonic() + 10
        while executor._running and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not executor._running
    finally:
        executor.stop()
    with session_factory() as s:
        (job,) = s.get(Revision, rev_id).jobs
        assert (job.state, job.verdict) == ("cancelled", None)


def test_the_second_job_of_a_kernel_keeps_the_first_jobs_timing_method(session_factory, tmp_path):
    # issue 25: one history never mixes methods; the first job chooses, with nothing handed to it
    pipeline = FakePipeline()
    _submit(session_factory)
    assert _executor(session_factory, tmp_path, pipeline).drain() == 1
    with session_factory() as s:
        rev_id = submit_revision(UnitOfWork(s), repo="/src/flash", sha="HEAD", force=True)
        assert plan_revision(UnitOfWork(s), rev_id, sources=FakeSources()).error is None
    assert _executor(session_factory, tmp_path, pipeline).drain() == 1
    assert pipeline.kept_methods == [{}, {"b1_h8_s512_d64/float16": "events"}]
