"""`gate run`: the whole pipeline on this machine, no server. Table for people, JSON with --json.

Without `--sha`, a local repository with uncommitted changes (tracked or untracked, `.gitignore`
applies) is gated as its working tree against HEAD (`gate.sources.working_tree`), and the first
line says so; a clean one gates HEAD against its parent. `--sha` always gates that commit.

It reads the server's settings; only the GPU child it starts stays lean. Progress goes to stderr,
the report to stdout; the exit code is the worst verdict's (`gate --help`). Each kernel is one
`JobOrder` through the executors' own entry (`load_gate_job`), without the history: nothing is reused.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.domain.job import GateOutcome, JobOrder
    from gate.sources.mirror import Mirror


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="gate a revision locally (no server)")
    p.add_argument("--repo", required=True, help="path or git URL of a repository with gate.toml")
    p.add_argument("--sha", default=None, help="candidate revision (default: the working tree of a local "
                   "repository with uncommitted changes, against HEAD; else HEAD)")
    p.add_argument("--base", default=None, help="baseline revision (default: the candidate's parent)")
    p.add_argument("--kernel", action="append", dest="kernels", default=None, help="only this kernel")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--static-only", action="store_true",
                   help="compile and read registers, spills and SASS only: no GPU stage runs (verdict incomplete)")


def progress(kernel: str, started: float, stream=sys.stderr):  # noqa: ANN001, ANN201
    """One stderr line per stage transition of `kernel`, with the time since `started` (monotonic)."""
    def show(event) -> None:  # noqa: ANN001
        detail = f"  {event.detail}" if event.detail else ""
        line = (f"[{time.monotonic() - started:7.1f}s] {kernel:<16} {event.stage:<12} {event.side:<10} "
                f"{event.state:<8}{detail}")
        print(line.rstrip(), file=stream, flush=True)
    return show


def main(args: argparse.Namespace) -> int:
    from gate.config import get_settings
    from gate.executors.job import JobContext, load_gate_job
    from gate.executors.spare import Spares
    from gate.nvidia.devices import slot_gpus
    from gate.sources.mirror import Mirror

    settings = get_settings()
    data_dir = Path(settings.data_dir)
    mirror = Mirror(data_dir / "mirrors")
    orders, working_tree = _orders(args, mirror, data_dir)
    started = time.monotonic()
    options = dataclasses.replace(settings.run_options(), gpu_stages=not args.static_only)
    # One slot, as a worker's: the first GPU CUDA_VISIBLE_DEVICES leaves (its child sees that one alone).
    gpu = next(iter(slot_gpus()), None)
    # Several kernels: each job's child is started while the one before ends (gate/executors/spare.py).
    spares = (Spares(data_dir / "spares", hidden=(data_dir,), gpu=gpu) if len(orders) > 1 and settings.spare_child
              else None)
    gate_job, outcomes = load_gate_job(), []
    try:
        for i, order in enumerate(orders):
            if spares is not None and i == len(orders) - 1:
                spares.no_more()
            outcomes.append(gate_job(order, JobContext(data_dir=data_dir, options=options, mirror=mirror,
                                                       on_event=progress(order.kernel, started), spares=spares,
                                                       gpu=gpu)))
    finally:
        if spares is not None:
            spares.close()
    return _report(args, orders[0], working_tree, outcomes)


def _orders(args: argparse.Namespace, mirror: Mirror, data_dir: Path) -> tuple[list[JobOrder], bool]:
    """One order per kernel asked for (default: all the manifest's); whether the candidate is the working tree."""
    from gate.domain.job import JobOrder
    from gate.executors.job import kernel_spec
    from gate.job_folders import remove
    from gate.manifest.load import load_manifest
    from gate.sources.working_tree import snapshot as working_tree_commit

    sha = mirror.resolve(args.repo, args.sha or "HEAD")
    working_tree = (args.sha is None and Path(args.repo).is_dir()
                    and (snapshot := working_tree_commit(args.repo, exclude=(data_dir,))))
    if working_tree:
        sha = mirror.resolve(args.repo, snapshot)
    base_sha = mirror.resolve(args.repo, args.base) if args.base else mirror.commit_info(args.repo, sha)["parent_sha"]
    workspace = data_dir / "workspaces" / f"manifest-{uuid.uuid4().hex[:8]}"     # a throw-away checkout
    try:
        manifest = load_manifest(Path(mirror.checkout(args.repo, sha, workspace).path))
    finally:
        remove(workspace)
    names = [kernel_spec(manifest, name).name for name in args.kernels or []] or [k.name for k in manifest.kernels]
    return [JobOrder(repo=args.repo, sha=sha, base_sha=base_sha, kernel=name) for name in names], bool(working_tree)


def _report(args: argparse.Namespace, order: JobOrder, working_tree: bool, outcomes: list[GateOutcome]) -> int:
    """The report on stdout (a table, or JSON with --json); the exit code of the worst verdict."""
    from gate.domain.codec import to_json
    from gate.domain.verdict import Verdict, worst_verdict

    sha, base_sha = order.sha, order.base_sha
    verdict = worst_verdict(o.report.verdict for o in outcomes) or Verdict.ERROR
    if args.json:
        doc = {"repo": args.repo, "sha": sha, "base_sha": base_sha, "working_tree": working_tree,
               "verdict": verdict.value, "kernels": [
            {"kernel": o.result.kernel, "verdict": o.report.verdict.value, "reason": o.report.reason,
             "rules": to_json(o.report.rules), "result": to_json(o.result),
             "artifacts": [{"kind": kind, "path": path} for kind, path in o.artifacts]}
            for o in outcomes]}
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        from gate.commands.run_report import render

        if working_tree:   # the first line says what was gated: not a commit
            sys.stdout.write(f"working tree of {args.repo} (uncommitted changes) against HEAD "
                             f"{base_sha[:12] if base_sha else '?'}\n")
        sys.stdout.write(render(outcomes, sha=sha, base_sha=base_sha))
    return verdict.exit_code
