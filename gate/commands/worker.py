"""`gate worker`: a GPU worker that takes jobs from the database (local) or the broker (celery).

Its GPUs: those `--gpu INDEX|UUID` names (repeatable), else those CUDA_VISIBLE_DEVICES leaves
visible, else every GPU of the host (`gate.nvidia.devices.slot_gpus`); each job's child sees its
slot's GPU alone. GATE_EXECUTOR=local: a loop polling the database, one slot (thread) per GPU.
GATE_EXECUTOR=celery: a Celery worker (one process, one job at a time), so one GPU each: start one
per GPU (`gate worker --gpu 0`, `gate worker --gpu 1`), each consuming the queue of its GPU's kind
and `gate.any`.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="run jobs on this host's GPUs, one at a time per GPU")
    p.add_argument("--gpu", action="append", metavar="INDEX|UUID",
                   help="a GPU to run jobs on, by nvidia-smi's index or its UUID; repeat for more (Celery: "
                        "one per worker). Default: every GPU CUDA_VISIBLE_DEVICES leaves visible")
    p.add_argument("--gpu-kind", default=None, help="route key; default: the GPU's name")
    p.add_argument("--once", action="store_true", help="run queued jobs, then exit")


def main(args: argparse.Namespace) -> int:
    from gate.commands.pch import precompile_in_background
    from gate.commands.startup import start
    from gate.executors.base import JobEnvironment
    from gate.executors.job import load_gate_job
    from gate.executors.liveness import worker_id
    from gate.executors.local import LocalExecutor
    from gate.notify.listeners import notifier_for
    from gate.nvidia.devices import slot_gpus
    from gate.services.sources import MirrorSources

    settings, store = start()
    gpus = slot_gpus(args.gpu)
    if gpus:        # bindings compile in the build stage, which runs only where a GPU is
        precompile_in_background(settings)
    kind = args.gpu_kind or (gpus[0].name if gpus else "cpu")
    env = JobEnvironment(store=store, gate_job=load_gate_job(),
                         data_dir=settings.data_dir, options=settings.run_options(),
                         mirror=MirrorSources(settings.data_dir).mirror,
                         notifier=notifier_for(settings),   # its verdicts' statuses, like the server's
                         spare_child=settings.spare_child)
    if settings.executor == "celery":
        from gate.executors.celery import CeleryExecutor, queue_name

        if args.once or len(gpus) > 1:
            print("gate worker: a Celery worker waits for messages (no --once) and runs one job at a time on one "
                  f"GPU: start one per GPU with --gpu (this host has {len(gpus)})")
            return 2
        gpu = gpus[0] if gpus else None
        executor = CeleryExecutor(env, settings.broker_url, gpu=gpu,
                                  worker_name=worker_id("celery", "worker", f"gpu{gpu.index}" if gpu else kind))
        executor.app.worker_main(["worker", "--pool=solo", "--concurrency=1", "--loglevel=INFO",
                                  *([f"--hostname=gpu{gpu.index}@%h"] if gpu else []),   # one node name per GPU
                                  f"--queues={queue_name(kind)},{queue_name('any')}"])
        return 0
    executor = LocalExecutor(env, gpus=gpus, role=f"worker-{kind}", kind=args.gpu_kind)
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
