"""The GPU child of a job: `run_child` writes its request, starts the child in its box or tells a spare
(`gate.executors.spare`) to go, follows it, and turns how it ended into the job's `JobResult` or the
gate's error. `launch` is the one place a child's box and environment are made: a slot's child sees
its GPU alone and runs on the cores near it (`slot_note` says so). `ChildProcess.supervise` streams its
events to the caller and kills its process group on cancel (`JobCancelled`), on the timeout, or past
the box's disk cap.

Nothing the child writes is believed: its result JSON is read through `gate.returned_files`. A child
that dies inside a stage (signal, CUDA fault, timeout, the box's memory or disk cap) did so because of
the kernel: the stage that was running (the last `started` event without an end) becomes FAILED with
the evidence, and the job ends in `reject`. One that dies outside a stage is the gate's: `RunnerError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import gate
import gate.errors
from gate import box
from gate.domain.codec import from_json
from gate.domain.job import CAPTURING_GRAPHS, LOADING_MODULE, JobRequest, ProgressEvent, RunOptions
from gate.domain.names import Side, Stage
from gate.domain.results import STAGE_RESULT_TYPES, JobResult, SideResults, StageStatus
from gate.errors import GateError, JobCancelled, RunnerError
from gate.nvidia import compiler, devices
from gate.nvidia.gpu_watch import BUSY_WHILE_IDLE_PCT
from gate.returned_files import Budget, Refused, read_returned, usage_bytes
from gate.domain.child_protocol import (
    REQUEST_NAME,
    RESULT_NAME,
    ExitCode,
    ProtocolError,
    parse_line,
    write_request,
)

STDERR_TAIL_LINES = 60
CANCEL_POLL_S = 0.2          # how often a waiting parent looks at its cancel event
DISK_POLL_S = 1.0            # how often it measures the child's folder against the disk cap
# The child's output is the kernel's to choose: a line is read in pieces of at most this many
# characters, and at most QUEUED_EVENT_LINES wait for the parent (the child then blocks), so a
# child that prints without end or without newlines costs the parent bounded memory.
MAX_LINE_CHARS = 64 << 10
QUEUED_EVENT_LINES = 1024
_EOF = object()
_CANCELLED, _TIMED_OUT, _OVER_DISK = "cancelled", "timed out", "over the disk cap"


def child_command(request_path: Path, result_path: Path, *, spare: bool = False) -> list[str]:
    return [sys.executable, "-m", "gate.runner", *(["--spare"] if spare else []), str(request_path), str(result_path)]


@dataclass(frozen=True)
class Launch:
    """Where and how a child starts: its folder (its request and result live there), box and environment."""

    folder: Path
    box: box.Box
    env: dict[str, str]


def launch(folder: Path, options: RunOptions, checkouts: tuple[Path, ...], hidden: tuple[Path, ...],
           gpu: devices.Gpu | None = None) -> Launch:
    """A child's box (it writes its folder and the object cache; reads its checkouts, the precompiled torch
    headers, which every later job's binding compiles with, and the host's compile places; sees nothing of
    `hidden`; `gpu` alone, or every GPU for None) and its environment (it imports the same `gate` package
    as this process, wherever it is installed)."""
    writable = (Path(folder), *((Path(options.build_cache_dir),) if options.build_cache_dir else ()))
    pch = options.pch_path
    if pch is not None and any(pch.resolve().is_relative_to(w.resolve()) for w in writable):
        raise box.BoxError(f"the precompiled headers ({pch}) must not lie inside a folder a job writes")
    readable = (*checkouts, *((pch,) if pch is not None and pch.is_dir() else ()), compiler.slot_folder())
    pinned = gpu is not None and shutil.which("taskset") is not None      # util-linux's, beside prlimit
    spec = box.Box(writable=writable, readable=readable, hidden=hidden, gpu=gpu or True, limits=box.GPU_CHILD_LIMITS,
                   cpus=tuple(devices.near_cpus(gpu)) if pinned else ())
    root = str(Path(gate.__file__).resolve().parent.parent)
    paths = [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), "PYTHONUNBUFFERED": "1",
           **({"CUDA_VISIBLE_DEVICES": gpu.uuid} if gpu is not None else {})}
    return Launch(Path(folder), spec, env)


def slot_note(gpu: devices.Gpu, cpus: tuple[int, ...], before: dict[str, int], after: dict[str, int]) -> str:
    """The job's evidence of its slot: the GPU and cores its child had, and the other GPUs' load
    (`devices.utilisation`, by UUID) when the child started and when it ended."""
    cores = "any core (the host names none near it)"
    if cpus:
        listed = f"{cpus[0]}-{cpus[-1]}" if cpus[-1] - cpus[0] + 1 == len(cpus) else ",".join(map(str, cpus))
        cores = f"cores {listed} (near it)"
    others = [uuid for uuid in dict.fromkeys([*before, *after]) if uuid != gpu.uuid]
    loads = ", ".join(f"{uuid[:12]} {before.get(uuid, '?')} -> {after.get(uuid, '?')} %" for uuid in others)
    busy = any(max(before.get(u, 0), after.get(u, 0)) >= BUSY_WHILE_IDLE_PCT for u in others)
    neighbours = f"{'busy' if busy else 'idle'} ({loads} from the child's start to its end)" if others else "none"
    return f"slot: {gpu}; its child ran on {cores}; the other GPUs: {neighbours}"


def run_child(request: JobRequest, timeout_s: float, on_event: Callable[[ProgressEvent], None] | None = None,
              *, command: list[str] | None = None, hidden: tuple[Path, ...] = (),
              cancel: threading.Event | None = None, budget: Budget | None = None,
              child: ChildProcess | None = None, gpu: devices.Gpu | None = None) -> JobResult:
    """One job's stages in a child process: its `JobResult`, whose first notes say what bounded the box and,
    for a slot's `gpu`, which GPU and cores it had. `child`: a spare made with this request's folders, told
    to go; else one is started, hiding `hidden`, running `command` if given (tests stand in a crashing
    child). `budget` counts what the child hands back."""
    budget = budget if budget is not None else Budget()
    folder = Path(request.artifacts_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RESULT_NAME).unlink(missing_ok=True)
    write_request(folder / REQUEST_NAME, request)
    before = devices.utilisation() if gpu is not None else {}
    if child is not None:
        child.go()
    else:
        checkouts = tuple(Path(side.path) for side in (request.candidate, request.baseline) if side is not None)
        child = ChildProcess.start(launch(folder, request.options, checkouts, hidden, gpu), command=command)
    ending = child.supervise(timeout_s, on_event, cancel)
    slot = [slot_note(gpu, child.launch.box.cpus, before, devices.utilisation())] if gpu is not None else []
    result = _outcome(request, ending, folder, budget)
    return dataclasses.replace(result, notes=[ending.notes[0], *slot, *result.notes, *ending.notes[1:]])


@dataclass
class Ending:
    """What the parent saw of a supervised child: its event channel while it ran, then how it ended."""

    on_event: Callable[[ProgressEvent], None] | None = None
    running: dict[tuple[str, str], ProgressEvent] = field(default_factory=dict)   # started, not ended
    error: tuple[str, str] | None = None    # the GateError it reported: (class name, message)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL_LINES))   # stderr, stray stdout
    returncode: int = 0
    killed: str | None = None               # why the parent (or the box's cgroup) stopped it, if it did
    notes: list[str] = field(default_factory=list)   # the box's limits first, then what the box did

    def take(self, line: str) -> None:
        try:
            kind, event = parse_line(line)
        except ProtocolError:
            self.tail.append(line)          # stray output on the event channel: keep it as evidence
            return
        if kind == "error":
            self.error = event
            return
        self.running.pop((event.stage, event.side), None)
        if event.state in ("started", "running"):    # "running": a step inside a stage (a source compiled)
            self.running[(event.stage, event.side)] = event
        if self.on_event is not None:
            self.on_event(event)


class ChildProcess:
    """One `python -m gate.runner` in its box, in its own process group."""

    def __init__(self, proc: box.BoxedPopen, how: Launch):
        self.proc, self.launch, self.started = proc, how, time.monotonic()

    @classmethod
    def start(cls, how: Launch, *, spare: bool = False, command: list[str] | None = None) -> ChildProcess:
        """Start it; a spare (`gate.runner --spare`) warms up, then waits on its stdin for `go`."""
        files = (how.folder / REQUEST_NAME, how.folder / RESULT_NAME)      # a test's seam replaces the job's
        argv = command or (child_command(*files, spare=True) if spare else child_command(*files))
        proc = box.popen(how.box, argv, cwd=how.folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.PIPE if spare else subprocess.DEVNULL, text=True, errors="replace",
                         start_new_session=True, env=how.env)
        return cls(proc, how)

    def go(self) -> None:
        """Tell a spare its request is written. One that already died reads as any dead child."""
        with contextlib.suppress(OSError, ValueError):     # its stdin is closed: it exited; the wait sees how
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def supervise(self, timeout_s: float, on_event: Callable[[ProgressEvent], None] | None,
                  cancel: threading.Event | None) -> Ending:
        """Follow the child to its end (see the module doc); `JobCancelled` once `cancel` is set."""
        lines: queue.Queue = queue.Queue(maxsize=QUEUED_EVENT_LINES)
        ending = Ending(on_event)
        readers = [threading.Thread(target=_pump, args=(self.proc.stdout, lines.put, lines.put), daemon=True),
                   threading.Thread(target=_pump, args=(self.proc.stderr, ending.tail.append, None), daemon=True)]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + timeout_s
        try:
            stopped = self._follow(lines, ending, deadline, cancel)
            if stopped is None:
                try:
                    self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    stopped = _TIMED_OUT
        finally:
            if self.alive():
                self.kill()
            _drain(lines, readers[0])      # its reader may wait on a full queue
            for reader in readers:
                reader.join(timeout=5)
            self.close()
        if stopped == _CANCELLED:
            raise JobCancelled(f"its child (process group {self.proc.pid}) was killed")
        return self._ended(ending, stopped, timeout_s)

    def _follow(self, lines: queue.Queue, ending: Ending, deadline: float,
                cancel: threading.Event | None) -> str | None:
        """Read events until the child closes its output; why the parent stopped it first, if it did."""
        next_disk_check = time.monotonic() + DISK_POLL_S
        while True:
            left_s = deadline - time.monotonic()
            if cancel is not None and cancel.is_set():
                return _CANCELLED
            if left_s <= 0:            # a child that never stops printing times out as well
                return _TIMED_OUT
            if time.monotonic() >= next_disk_check:
                next_disk_check = time.monotonic() + DISK_POLL_S
                if usage_bytes(self.launch.folder) > self.launch.box.limits.disk_bytes:
                    return _OVER_DISK
            try:
                line = lines.get(timeout=min(left_s, CANCEL_POLL_S))
            except queue.Empty:
                continue
            if line is _EOF:
                return None
            ending.take(line)

    def _ended(self, ending: Ending, stopped: str | None, timeout_s: float) -> Ending:
        # The cgroup kills the biggest process, often a grandchild (a compiler): a child that then fails or
        # hangs ran out of box memory, and says so; one that ends cleanly keeps its result, with a note.
        ending.returncode = returncode = box.returncode(self.proc.returncode)
        memory = self.proc.memory
        oom = memory.oom_killed()
        oom_line = f"had a process killed for passing the box's memory cap ({memory.mechanism})"
        disk_bytes = self.launch.box.limits.disk_bytes
        if stopped == _OVER_DISK:
            ending.killed = f"wrote more than {disk_bytes} bytes into its folder (the box's disk cap)"
        elif oom and (stopped == _TIMED_OUT or returncode != ExitCode.OK):
            ending.killed = oom_line
        elif stopped == _TIMED_OUT:
            ending.killed = f"timed out after {timeout_s:g} s"
        tmpfs = ("none of its own (unboxed)" if not box.enabled() else f"{self.launch.box.limits.tmp_bytes} bytes each"
                 if box.sizes_tmpfs() else "not size-capped (bwrap without --size)")
        ending.notes = [f"box limits: memory: {memory.mechanism}; tmpfs {tmpfs}; its folder at most {disk_bytes} bytes",
                        *([f"the box {oom_line}"] if oom and ending.killed is None else [])]
        return ending

    def kill(self) -> None:
        """SIGKILL the child's whole process group (nvcc, ncu and their children included)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.memory.kill_all()      # and everything in the box's cgroup, at once
        self.proc.wait()

    def close(self) -> None:
        """End it (closing its stdin ends a waiting spare; a kill ends the rest) and close its pipes."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        if self.alive():
            self.kill()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _pump(stream, sink: Callable, on_end: Callable | None) -> None:
    while line := stream.readline(MAX_LINE_CHARS):
        sink(line.rstrip("\n"))
    if on_end is not None:
        on_end(_EOF)


def _drain(lines: queue.Queue, reader: threading.Thread, timeout_s: float = 5.0) -> None:
    """Empty the event queue until its reader ends (it may wait on a full queue after we stopped)."""
    deadline = time.monotonic() + timeout_s
    while reader.is_alive() and time.monotonic() < deadline:
        with contextlib.suppress(queue.Empty):
            lines.get(timeout=0.05)


def _read_result(folder: Path, budget: Budget) -> JobResult:
    """The child's result JSON, read across the boundary (`gate.returned_files`)."""
    return from_json(JobResult, json.loads(read_returned(folder, RESULT_NAME, budget)))


def _outcome(request: JobRequest, ending: Ending, folder: Path, budget: Budget) -> JobResult:
    code, killed, tail = ending.returncode, ending.killed, list(ending.tail)
    if killed is None and code == ExitCode.OK:
        try:
            return _read_result(folder, budget)
        except (Refused, OSError, ValueError, TypeError) as exc:
            raise RunnerError(f"the child exited cleanly but its result is unreadable: {exc}") from exc
    if killed is None and code == ExitCode.GATE_ERROR and ending.error is not None:
        cls = getattr(gate.errors, ending.error[0], None)
        cls = cls if isinstance(cls, type) and issubclass(cls, GateError) else RunnerError
        raise cls(ending.error[1])
    how = killed if killed is not None else box.how_it_ended(code)
    if killed is None and code in (ExitCode.USAGE, ExitCode.BAD_REQUEST, ExitCode.INTERNAL):
        raise RunnerError(f"the gate's child process failed ({how}): {_last_line(tail)}")
    if not ending.running:
        raise RunnerError(f"the child process {how} outside any stage: {_last_line(tail)}")
    last = list(ending.running.values())[-1]
    step = f", {last.detail}" if last.state == "running" and last.detail in (LOADING_MODULE, CAPTURING_GRAPHS) else ""
    reason = f"child {how} during {last.stage} ({last.side}{step})"
    return _failed_stage(request, folder, budget, last, reason, "\n".join(tail))


def _last_line(tail: list[str]) -> str:
    lines = [line for line in tail if line.strip()]
    return lines[-1].strip()[:200] if lines else "no output on stderr"


def _failed_stage(request: JobRequest, folder: Path, budget: Budget, last: ProgressEvent, reason: str,
                  evidence: str) -> JobResult:
    """The child's last checkpoint (or an empty result) with the running stage marked FAILED."""
    try:
        result = _read_result(folder, budget)
    except (Refused, OSError, ValueError, TypeError):
        result = JobResult(kernel=request.kernel.name, candidate=SideResults(sha=request.candidate.sha),
                           baseline=SideResults(sha=request.baseline.sha) if request.baseline else None)
    stage_type = STAGE_RESULT_TYPES.get(last.stage)
    if stage_type is None:
        raise RunnerError(f"{reason}, but {last.stage!r} is no stage the gate knows")
    detail = f"{reason}: {_last_line(evidence.splitlines())}"
    failed = stage_type(status=StageStatus.FAILED, reason=detail[:500])
    if hasattr(failed, "log"):
        failed.log = evidence
    if last.stage == Stage.BENCH:
        result.bench = failed
    else:
        target = result.baseline if last.side == Side.BASELINE and result.baseline else result.candidate
        setattr(target, last.stage, failed)
    result.notes.append(f"{reason}; stderr tail:\n{evidence}")
    return result
