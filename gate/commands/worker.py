"""`gate worker`: a GPU worker that takes jobs from the database (local) or the broker (celery).

GATE_EXECUTOR=celery: a Celery worker (one process, one job at a time) consuming the queues of its
GPU kind and `gate.any`. GATE_EXECUTOR=local: a loop polling the database for queued jobs.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="run jobs for one GPU kind")
    p.add_argument("--gpu-kind", default=None, help="route key; default: this machine's GPU name")
    p.add_argument("--once", action="store_true", help="run queued jobs, then exit")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from gate.commands.pch import precompile_in_background
    from gate.commands.startup import start
    from gate.executors.base import JobEnvironment
    from gate.executors.job import load_gate_job
    from gate.executors.local import LocalExecutor, local_gpus
    from gate.notify.listeners import notifier_for
    from gate.services.sources import MirrorSources

    settings, store = start()
    gpus = local_gpus()
    if gpus:        # bindings compile in the build stage, which runs only where a GPU is
        precompile_in_background(settings)
    kind = args.gpu_kind or (gpus[0] if gpus else "cpu")
    env = JobEnvironment(store=store, gate_job=load_gate_job(),
                         data_dir=settings.data_dir, options=settings.run_options(),
                         mirror=MirrorSources(settings.data_dir).mirror,
                         notifier=notifier_for(settings),   # its verdicts' statuses, like the server's
                         spare_child=settings.spare_child)
    if settings.executor == "celery":
        from gate.executors.celery import CeleryExecutor, queue_name

        from gate.executors.liveness import worker_id

        executor = CeleryExecutor(env, settings.broker_url, worker_name=worker_id("celery", "worker", kind))
        if args.once:
            print("gate worker: --once needs GATE_EXECUTOR=local (a Celery worker waits for messages)")
            return 2
        executor.app.worker_main(["worker", "--pool=solo", "--concurrency=1", "--loglevel=INFO",
                                  f"--queues={queue_name(kind)},{queue_name('any')}"])
        return 0
    executor = LocalExecutor(env, gpus=[kind] if gpus or args.gpu_kind else [], role=f"worker-{kind}")
    if args.once:
        try:
            print(f"ran {executor.drain()} job(s)")
        finally:
            executor.close_spares()
        return 0
    executor.start()
    try:
        import threading

        threading.Event().wait()
    finally:
        executor.stop()
    return 0
