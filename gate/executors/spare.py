"""A GPU child started before its job, so that the next job begins at its stages.

Every job's child first imports torch and makes a CUDA context: 5.4 s on an H100 before its build
could load anything (docs/measurements.md). An executor that runs jobs
one after another starts the next job's child as soon as one ends (`Spares.refill`). The child
(`python -m gate.runner --spare`) does that work, starts both sides' profile sessions in the
folders the job's profile stages will use (`pipeline.ahead.start_early`: ncu, its target's torch and
context), and waits. The next job takes it (`Spares.take`) when it is about to start its child,
moves its checkouts into the folders the child's box was made with (`Spare.adopt`), writes the
request and says go (`gate.executors.child.run_child(spare=)`).

The box is the one a job's child gets (`child.child_box`), made before the job exists: so its
folders are chosen first, under `root`, one set per spare: `box/` (the child's folder, writable),
`candidate/` and `baseline/` (the checkouts, read-only; a job without a baseline leaves that one
empty). `hidden` covers what the data folder holds besides them. A spare serves one job and is then
gone; nothing of a submission's is in its box before the go, so no job sees another's.

A spare that died while it waited (its import failed, the box killed it) is not used: the job starts
a child of its own, as it would without spares. One is used only with the options it was made for
(its object cache is bound into the box, its profile sessions run their ncu). Its idle CUDA
contexts are on the GPU between jobs: a serial executor's own next child, never timed work's
neighbour.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from gate import box
from gate.domain.codec import to_json
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.job_folders import remove
from gate.domain.child_protocol import REQUEST_NAME, RESULT_NAME, SPARE_OPTIONS_NAME
from gate.nvidia import devices

log = logging.getLogger(__name__)


@dataclass
class Spare:
    """One waiting child and its folders (see the module doc)."""

    proc: box.BoxedPopen
    spec: box.Box
    folder: Path
    options: RunOptions          # what it was started for: its box binds their object cache, its sessions their ncu
    started: float = field(default_factory=time.monotonic)

    def note(self) -> str:
        return f"the child was started {time.monotonic() - self.started:.1f} s before its job's go (a spare)"

    @property
    def box_dir(self) -> Path:
        return self.folder / "box"

    def adopt(self, request: JobRequest) -> JobRequest:
        """`request` moved into this spare's folders: each checkout's entries into `candidate/` or
        `baseline/` (a rename where both lie on one file system, else a copy), its box folder this one's."""
        def moved(checkout: Checkout | None, side: str) -> Checkout | None:
            if checkout is None:
                return None
            for entry in Path(checkout.path).iterdir():
                shutil.move(entry, self.folder / side / entry.name)
            return replace(checkout, path=str(self.folder / side))

        return replace(request, candidate=moved(request.candidate, "candidate"),
                       baseline=moved(request.baseline, "baseline"), artifacts_dir=str(self.box_dir))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def discard(self) -> None:
        """Stop the child (closing its stdin ends a waiting one; a kill ends the rest) and remove its folders."""
        from gate.executors.child import kill_group

        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self.alive():
            kill_group(self.proc)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        remove(self.folder)


class Spares:
    """At most one spare child at a time, for the jobs one executor thread runs one after another."""

    def __init__(self, root: Path, hidden: tuple[Path, ...]):
        self.root, self.hidden = Path(root), tuple(hidden)
        self._spare: Spare | None = None
        self._lock = threading.Lock()
        self._more = True

    def take(self, options: RunOptions) -> Spare | None:
        """The waiting spare, if it is alive and was made for `options`; else None (any other is discarded)."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if spare.alive() and spare.options == options:
            return spare
        spare.discard()
        return None

    def refill(self, options: RunOptions) -> None:
        """Start the next job's child, where jobs run on a GPU; a failure to start one is only logged
        (the next job starts its own)."""
        if not (self._more and options.gpu_stages and devices.gpu_nodes()):
            return
        with self._lock:
            if self._spare is not None:
                return
            try:
                self._spare = _start(self.root / uuid.uuid4().hex[:12], self.hidden, options)
            except (OSError, box.BoxError) as exc:
                log.warning("no spare child started: %s", exc)

    def no_more(self) -> None:
        """The next job is the last: it takes the waiting child, and none is started after it."""
        self._more = False

    def close(self) -> None:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.discard()
        remove(self.root)


def for_worker(data_dir: Path, worker: str, enabled: bool) -> Spares | None:
    """The spares of one worker (an executor's slot thread, a Celery worker process), which runs its
    jobs one after another: None where it does not ask for them or has no GPU."""
    if not (enabled and devices.gpu_nodes()):
        return None
    data_dir = Path(data_dir).resolve()
    folder = "".join(ch if ch.isalnum() else "-" for ch in worker)    # a worker id holds '/' and '@'
    return Spares(data_dir / "spares" / folder, hidden=(data_dir,))


def _start(folder: Path, hidden: tuple[Path, ...], options: RunOptions) -> Spare:
    from gate.executors.child import child_box, child_command, child_env

    box_dir = folder / "box"
    sides = (folder / "candidate", folder / "baseline")
    for path in (box_dir, *sides):
        path.mkdir(parents=True)
    (box_dir / SPARE_OPTIONS_NAME).write_text(json.dumps(to_json(options)))   # what it warms up for
    spec = child_box(box_dir, options, sides, hidden)
    proc = box.popen(spec, child_command(box_dir / REQUEST_NAME, box_dir / RESULT_NAME, spare=True),
                     cwd=box_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE,
                     text=True, errors="replace", start_new_session=True, env=child_env())
    return Spare(proc=proc, spec=spec, folder=folder, options=options)
