"""`gate serve`: API + dashboards + (by default) the embedded local executor.

The schema is migrated first. Unlike `gate run` and `gate demo`, repositories on the server's disk
are refused unless GATE_ALLOW_LOCAL_REPOS=1. With GATE_EXECUTOR=celery the server only sends jobs to the broker;
with --no-executor (local) jobs wait in the database for `gate worker` processes. Connections are
capped and given a header deadline (`gate.api.connections`); a reverse proxy belongs in front
(docs/deploy.md).
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the API and dashboards (embedded executor by default)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on")
    p.add_argument("--port", type=int, default=8000, help="port to listen on")
    p.add_argument("--no-executor", action="store_true", help="serve only; jobs run on separate workers")


def main(args: argparse.Namespace) -> int:
    import uvicorn

    from gate.api import connections
    from gate.api.app import create_app
    from gate.commands.pch import precompile_in_background
    from gate.commands.startup import start
    from gate.nvidia.devices import slot_gpus

    settings, store = start()
    store.dispose()
    if not args.no_executor and settings.executor == "local" and slot_gpus():
        precompile_in_background(settings)       # this process's executor compiles jobs' bindings on its GPU
    # Answering the network: repositories on this disk only with GATE_ALLOW_LOCAL_REPOS=1.
    app = create_app(settings, embedded_executor=not args.no_executor, local_repos=False)
    cap = connections.descriptor_cap(settings.max_connections)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="info", backlog=connections.BACKLOG,
                            http=connections.guarded_h11(cap))
    connections.cut_repeats()            # after uvicorn's Config, which sets its loggers up
    uvicorn.Server(config).run()
    return 0
