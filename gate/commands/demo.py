"""`gate demo`: replay FlashCore's history as real commits, gate each, serve the dashboard."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="build a FlashCore history, gate it, serve the dashboard")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-serve", action="store_true", help="gate the history, print it, and exit")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from gate.config import get_settings
    from gate.demo.replay import replay, summary
    from gate.executors.local import local_gpus

    settings = get_settings()
    gpus = local_gpus()
    if gpus:
        print(f"GPU: {', '.join(gpus)}. Every stage runs: build, correctness, timing, profile "
              "(flashcore_wgmma only on an sm_90 GPU: it is built for sm_90a alone).")
    else:
        print("No CUDA device on this machine: the demo runs the static stage (nvcc, ptxas, SASS) for "
              "every commit;\ncorrectness, timing and profiling are reported as not run, so verdicts are "
              "`incomplete`, never `accept`.")
    rows = replay(settings, sys.stdout)
    print("\n" + summary(rows))
    if args.no_serve:
        return 0
    import uvicorn

    from gate.api.app import create_app

    print(f"\nDashboard: http://{args.host}:{args.port}/  (Ctrl-C to stop)", flush=True)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="warning")
    return 0
