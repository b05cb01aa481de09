"""`gate demo`: replay FlashCore's history as real commits, gate each, serve the dashboard.

`gate demo --sample` serves the synthetic sample history instead (no GPU, no compiler, no git):
a populated dashboard on any machine, every page labelled synthetic at the top.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="build a FlashCore history, gate it, serve the dashboard")
    p.add_argument("--host", default="127.0.0.1", help="address the dashboard listens on")
    p.add_argument("--port", type=int, default=8000, help="port the dashboard listens on")
    p.add_argument("--no-serve", action="store_true", help="gate the history, print it, and exit")
    p.add_argument("--verbose", action="store_true", help="print every stage of every job, not only the verdicts")
    p.add_argument("--sample", action="store_true",
                   help="serve the synthetic sample history instead (needs no GPU; labelled synthetic)")
    p.add_argument("--revisions", type=int, default=60, help="revisions in the --sample history")


def main(args: argparse.Namespace) -> int:
    from gate.config import get_settings

    settings = get_settings()
    if args.sample:
        return _sample(args, settings)
    from gate.commands.pch import precompile_in_background
    from gate.demo.replay import replay, summary
    from gate.nvidia.devices import slot_gpus

    gpus = [gpu.name for gpu in slot_gpus()]
    if gpus:        # bindings compile in the build stage, which runs only where a GPU is
        precompile_in_background(settings)
        print(f"GPU: {', '.join(gpus)}. Every stage runs: build, correctness, timing, profile "
              "(flashcore_wgmma only on an sm_90 GPU: it is built for sm_90a alone).")
    else:
        print("No CUDA device on this machine: the demo runs the static stage (nvcc, ptxas, SASS) for "
              "every commit;\ncorrectness, timing and profiling are reported as not run, so verdicts are "
              "`incomplete`, never `accept`. The dashboard says so at the top of every page.\n"
              "(`gate demo --sample` serves a populated, synthetic dashboard instead.)")
    rows = replay(settings, sys.stdout, verbose=args.verbose)
    print("\n" + summary(rows))
    if args.no_serve:
        return 0
    return _serve(args, settings, embedded_executor=True)


def _sample(args: argparse.Namespace, settings) -> int:  # noqa: ANN001 (a Settings)
    from gate.demo.sample_db import write_sample_db
    from gate.errors import GateError

    if args.revisions < 2:
        raise GateError(f"--revisions must be at least 2, not {args.revisions}")
    url, written = write_sample_db(settings.data_dir, args.revisions)
    print(f"Synthetic sample history: {written.revisions} revisions, {written.jobs} jobs, {written.metrics} "
          f"metrics in {url.removeprefix('sqlite:///')}.\nGenerated for illustration, not measured: every page "
          "says so at the top.")
    if args.no_serve:
        return 0
    return _serve(args, settings.model_copy(update={"database_url": url}), embedded_executor=False)


def _serve(args: argparse.Namespace, settings, *, embedded_executor: bool) -> int:  # noqa: ANN001
    import uvicorn

    from gate.api.app import create_app

    print(f"\nDashboard: http://{args.host}:{args.port}/  (Ctrl-C to stop)", flush=True)
    uvicorn.run(create_app(settings, embedded_executor=embedded_executor), host=args.host, port=args.port,
                log_level="warning")
    return 0
