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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gate.config import Settings
from gate.demo.flashcore_commits import Step, build_demo_repo
from gate.domain.job import ProgressEvent
from gate.executors.base import GateJob, JobEnvironment, load_gate_job
from gate.executors.local import LocalExecutor
from gate.services.sources import MirrorSources
from gate.services.submissions import plan_revision, submit_revision
from gate.storage.db import make_engine, make_session_factory
from gate.storage.samples import job_verdicts, revision_error
from gate.storage.schema import upgrade


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
    def run(**kwargs: Any) -> Any:
        store: Callable[[ProgressEvent], None] = kwargs.pop("on_event")

        def on_event(event: ProgressEvent) -> None:
            store(event)
            if event.state != "started":
                line = f"      {kwargs['kernel']:<18} {event.side:<9} {event.stage:<11} {event.state}"
                detail = textwrap.shorten(event.detail, LINE_CHARS - len(line) - 2) if event.detail else ""
                print(f"{line}: {detail}" if detail else line, file=out, flush=True)
        return gate_job(**kwargs, on_event=on_event)
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
    engine = make_engine(settings.database_url)
    upgrade(engine)
    session_factory = make_session_factory(engine)
    sources = MirrorSources(data_dir)
    gate_job = _printing(load_gate_job(), out) if verbose else load_gate_job()
    options = dataclasses.replace(settings.run_options(), compile_workers=os.cpu_count() or 1)
    env = JobEnvironment(session_factory=session_factory, gate_job=gate_job,
                         data_dir=data_dir, options=options, mirror=sources.mirror,
                         spare_child=settings.spare_child)
    executor = LocalExecutor(env, role="demo")
    rows = []
    try:
        for i, (sha, step) in enumerate(commits, 1):
            if verbose:
                print(file=out)
            print(f"[{i:>{len(str(len(commits)))}}/{len(commits)}] {sha[:10]}  {step.message}", file=out, flush=True)
            with session_factory() as session:
                revision = submit_revision(session, repo=str(repo), sha=sha, branch="main", source="demo")
                plan = plan_revision(session, revision, sources=sources)
                revision_id = revision.id
            if plan.error:
                print(f"      not planned: {plan.error}", file=out)
            executor.drain()
            rows.append(DemoRow(revision_id, sha, step.message, step.expect, _verdicts(session_factory, revision_id)))
            for kernel, verdict, reason in rows[-1].verdicts:
                line = f"   => {kernel:<18} {verdict.upper():<12}"
                print(f"{line} {textwrap.shorten(reason, LINE_CHARS - len(line) - 1)}", file=out, flush=True)
    finally:
        executor.close_spares()
        engine.dispose()
    print(f"Gated {len(commits)} commits in {time.monotonic() - started:.0f} s.", file=out, flush=True)
    return rows


def _verdicts(session_factory: Any, revision_id: int) -> list[tuple[str, str, str]]:
    with session_factory() as session:
        found = job_verdicts(session, revision_id)
        if not found:
            return [("-", "error", revision_error(session, revision_id) or "no jobs")]
    return [(k, v or "none", r or "") for k, v, r in found]


def summary(rows: list[DemoRow]) -> str:
    lines = [f"{'commit':<10}  {'kernel':<18} {'verdict':<12} {'expected on sm_90 GPU':<26} reason"]
    for row in rows:
        for kernel, verdict, reason in row.verdicts:
            expected = row.expect.get(kernel, "accept")
            lines.append(f"{row.sha[:10]}  {kernel:<18} {verdict:<12} {expected:<26} {reason}")
    return "\n".join(lines)
