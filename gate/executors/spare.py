"""A GPU child started before its job, so that the next job begins at its stages.

Every child first imports torch and makes a CUDA context: 5.4 s on an H100 (docs/measurements.md). An
executor running jobs one after another starts the next job's child as soon as one ends (`refill`):
the same `ChildProcess` (`gate.runner --spare`), which does that work, starts both sides' profile
sessions (`pipeline.ahead.start_early`) and waits. The next job takes it, moves its checkouts into the
folders its box was made with (`adopt`: `box/` writable, `candidate/` and `baseline/` read-only;
`hidden` covers the rest of the data folder), writes the request and says go.

A spare serves one job; nothing of a submission's is in its box before the go. One that died while
waiting, or made for other options (their object cache, their ncu), is not used. Its idle CUDA
contexts sit on the GPU between jobs: beside a serial executor's own next child, never beside timed work.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from gate import box
from gate.domain.codec import to_json
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.executors.child import ChildProcess, launch
from gate.job_folders import remove
from gate.domain.child_protocol import SPARE_OPTIONS_NAME
from gate.nvidia import devices

log = logging.getLogger(__name__)


@dataclass
class Spare:
    """One waiting child and its folders (see the module doc)."""

    child: ChildProcess
    folder: Path
    options: RunOptions          # what it was started for: its box binds their object cache, its sessions their ncu

    def note(self) -> str:
        return f"the child was started {time.monotonic() - self.child.started:.1f} s before its job's go (a spare)"

    def adopt(self, request: JobRequest) -> JobRequest:
        """`request` moved into this spare's folders (a rename on one file system, else a copy)."""
        def moved(checkout: Checkout | None, side: str) -> Checkout | None:
            if checkout is None:
                return None
            for entry in Path(checkout.path).iterdir():
                shutil.move(entry, self.folder / side / entry.name)
            return replace(checkout, path=str(self.folder / side))

        return replace(request, candidate=moved(request.candidate, "candidate"),
                       baseline=moved(request.baseline, "baseline"), artifacts_dir=str(self.folder / "box"))

    def discard(self) -> None:
        """Stop the child (closing its stdin ends a waiting one; a kill ends the rest) and remove its folders."""
        self.child.close()
        remove(self.folder)


class Spares:
    """At most one spare child at a time, for the jobs one executor thread runs one after another
    (on its slot's `gpu`, the only one its children see; None: every GPU)."""

    def __init__(self, root: Path, hidden: tuple[Path, ...], gpu: devices.Gpu | None = None):
        self.root, self.hidden, self.gpu = Path(root), tuple(hidden), gpu
        self._spare: Spare | None = None
        self._lock = threading.Lock()
        self._more = True

    def take(self, options: RunOptions) -> Spare | None:
        """The waiting spare, if it is alive and was made for `options`; else None (any other is discarded)."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if spare.child.alive() and spare.options == options:
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
                self._spare = _start(self.root / uuid.uuid4().hex[:12], self.hidden, options, self.gpu)
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


def for_worker(data_dir: Path, worker: str, enabled: bool, gpu: devices.Gpu | None = None) -> Spares | None:
    """The spares of one worker that runs its jobs one after another on `gpu`; None without GPUs or the setting."""
    if not (enabled and devices.gpu_nodes()):
        return None
    data_dir = Path(data_dir).resolve()
    folder = "".join(ch if ch.isalnum() else "-" for ch in worker)    # a worker id holds '/' and '@'
    return Spares(data_dir / "spares" / folder, hidden=(data_dir,), gpu=gpu)


def _start(folder: Path, hidden: tuple[Path, ...], options: RunOptions, gpu: devices.Gpu | None) -> Spare:
    box_dir = folder / "box"
    sides = (folder / "candidate", folder / "baseline")
    for path in (box_dir, *sides):
        path.mkdir(parents=True)
    (box_dir / SPARE_OPTIONS_NAME).write_text(json.dumps(to_json(options)))   # what it warms up for
    return Spare(ChildProcess.start(launch(box_dir, options, sides, hidden, gpu), spare=True), folder, options)
