"""Gate the demo repository's commits in order through the real pipeline, printing as it goes.

Each commit is submitted and planned like any other revision (so its baseline is the last accepted
revision of `main`), then the embedded executor runs its jobs before the next commit is submitted.
The console gets one line per commit and one per kernel verdict; `verbose` adds every stage's end.
A job's compiles use every core: the demo runs one job at a time, so half of them (a service's
default, `compile_pool.compile_workers`) would leave the other half idle.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gate.config import Settings
from gate.demo.flashcore_commits import Step, build_demo_repo
from gate.domain.job import GateOutcome, JobOrder, ProgressEvent
from gate.executors.base import JobEnvironment
from gate.executors.job import GateJob, JobContext, load_gate_job
from gate.executors.local import LocalExecutor
from gate.services.sources import MirrorSources
from gate.services.submissions import plan_revision, submit_revision
from gate.storage.schema import upgrade
from gate.storage.unit import Store


LINE_CHARS = 160          # a console line; longer texts are shortened at a word, with "[...]"


@dataclass
class DemoRow:
    revision_id: int
    sha: str
    message: str
    expect: dict[str, str]
    verdicts: list[tuple[str, str, str]]   # (kernel, verdict, reason)


def _printing(gate_job: GateJob, out: TextIO) -> GateJob:
    """The real pipeline, echoing each stage transition to the terminal as well as to the database."""
    def run(order: JobOrder, context: JobContext) -> GateOutcome:
        store = context.on_event

        def on_event(event: ProgressEvent) -> None:
            store(event)
            if event.state != "started":
                line = f"      {order.kernel:<18} {event.side:<9} {event.stage:<11} {event.state}"
                detail = textwrap.shorten(event.detail, LINE_CHARS - len(line) - 2) if event.detail else ""
                print(f"{line}: {detail}" if detail else line, file=out, flush=True)
        return gate_job(order, dataclasses.replace(context, on_event=on_event))
    return run


def replay(settings: Settings, out: TextIO, steps: tuple[Step, ...] | None = None, *,
           verbose: bool = False) -> list[DemoRow]:
    started = time.monotonic()
    data_dir = Path(settings.data_dir).resolve()
    # Beside the data folder, never in it: the data folder (mirrors, database) is never gateable
    # (`sources.policy.FetchPolicy.protecting`), and the demo's history is a repository like any other.
    repo = data_dir.with_name(f"{data_dir.name}-demo") / "flashcore"
    commits = build_demo_repo(repo) if steps is None else build_demo_repo(repo, steps)
    print(f"Demo repository: {repo} ({len(commits)} commits)", file=out)
    store = Store.from_url(settings.database_url)
    upgrade(store.engine)
    sources = MirrorSources(data_dir)
    gate_job = _printing(load_gate_job(), out) if verbose else load_gate_job()
    options = dataclasses.replace(settings.run_options(), compile_workers=os.cpu_count() or 1)
    env = JobEnvironment(store=store, gate_job=gate_job,
                         data_dir=data_dir, options=options, mirror=sources.mirror,
                         spare_child=settings.spare_child)
    executor = LocalExecutor(env, role="demo")
    rows = []
    try:
        for i, (sha, step) in enumerate(commits, 1):
            if verbose:
                print(file=out)
            print(f"[{i:>{len(str(len(commits)))}}/{len(commits)}] {sha[:10]}  {step.message}", file=out, flush=True)
            with store.unit() as uow:
                revision_id = submit_revision(uow, repo=str(repo), sha=sha, branch="main", source="demo")
                plan = plan_revision(uow, revision_id, sources=sources)
            if plan.error:
                print(f"      not planned: {plan.error}", file=out)
            executor.drain()
            rows.append(DemoRow(revision_id, sha, step.message, step.expect, _verdicts(store, revision_id)))
            for kernel, verdict, reason in rows[-1].verdicts:
                line = f"   => {kernel:<18} {verdict.upper():<12}"
                print(f"{line} {textwrap.shorten(reason, LINE_CHARS - len(line) - 1)}", file=out, flush=True)
    finally:
        executor.close_spares()
        store.dispose()
    print(f"Gated {len(commits)} commits in {time.monotonic() - started:.0f} s.", file=out, flush=True)
    return rows


def _verdicts(store: Store, revision_id: int) -> list[tuple[str, str, str]]:
    with store.unit() as uow:
        found = uow.samples.job_verdicts(revision_id)
        if not found:
            return [("-", "error", uow.samples.revision_error(revision_id) or "no jobs")]
    return [(k, v or "none", r or "") for k, v, r in found]


def summary(rows: list[DemoRow]) -> str:
    lines = [f"{'commit':<10}  {'kernel':<18} {'verdict':<12} {'expected on sm_90 GPU':<26} reason"]
    for row in rows:
        for kernel, verdict, reason in row.verdicts:
            expected = row.expect.get(kernel, "accept")
            lines.append(f"{row.sha[:10]}  {kernel:<18} {verdict:<12} {expected:<26} {reason}")
    return "\n".join(lines)
