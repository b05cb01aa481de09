"""A real Celery worker process for the kill test: `python celery_worker_process.py DB_URL KIND MODE DATA_DIR`.
MODE `hang` holds every job (the test kills this process mid-job); `run` finishes jobs at once.
Once it consumes its queue it writes DATA_DIR/worker-<pid>.ready, so the test can wait for it."""

import os
import sys
import threading
from pathlib import Path

from celery.signals import worker_ready

from service_fakes import FakePipeline

from gate.domain.job import RunOptions
from gate.executors.base import JobEnvironment
from gate.executors.celery import CeleryExecutor, queue_name
from gate.storage.db import make_engine
from gate.storage.unit import Store

BROKER = "redis://127.0.0.1:6379/0"

if __name__ == "__main__":
    url, kind, mode, data_dir = sys.argv[1:5]
    pipeline = FakePipeline(gate=threading.Event()) if mode == "hang" else FakePipeline()
    env = JobEnvironment(store=Store(make_engine(url)), gate_job=pipeline,
                         data_dir=Path(data_dir), options=RunOptions(), heartbeat_s=0.5)
    executor = CeleryExecutor(env, BROKER)
    worker_ready.connect(lambda **_: (Path(data_dir) / f"worker-{os.getpid()}.ready").touch(), weak=False)
    executor.app.worker_main(["worker", "--pool=solo", "--concurrency=1", "--loglevel=WARNING",
                              f"--queues={queue_name(kind)}", "--without-gossip", "--without-mingle"])
