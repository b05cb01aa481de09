"""Parent side of the GPU child: start it in its own process group, stream its events, enforce the
timeout, and turn a child that died into evidence.

Nothing the child writes is believed: its result JSON (and every other file it hands back) is read
through `gate.returned_files`, which opens only regular files under its folder and never follows a
link, and its folder is watched against the box's disk cap (`Limits.disk_bytes`) while it runs.

A child that dies inside a stage (signal, CUDA fault, hang past the timeout, the box's memory cgroup,
its folder past the disk cap) did so because of the kernel under test: the stage that was running
(the last `started` event without an end) becomes FAILED with the signal, exit code, stderr tail,
"timed out after N s" or the cap it passed, and the job ends in `reject`. A child that dies before any stage, or outside one, is the gate's problem: `RunnerError`.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import gate
import gate.errors
from gate.domain.codec import from_json
from gate.domain.job import CAPTURING_GRAPHS, LOADING_MODULE, JobRequest, ProgressEvent, RunOptions
from gate.domain.names import Side, Stage
from gate.domain.results import (
    JobResult,
    STAGE_RESULT_TYPES,
    SideResults,
    StageStatus,
)
from gate.errors import GateError, JobCancelled, RunnerError
from gate import box
from gate.executors.spare import Spare
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


def child_command(request_path: Path, result_path: Path, *, spare: bool = False) -> list[str]:
    return [sys.executable, "-m", "gate.runner", *(["--spare"] if spare else []), str(request_path), str(result_path)]


def child_env() -> dict[str, str]:
    """The child imports the same `gate` package as this process, wherever it is installed."""
    root = str(Path(gate.__file__).resolve().parent.parent)
    paths = [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)), "PYTHONUNBUFFERED": "1"}


def child_box(box_dir: Path, options: RunOptions, checkouts: tuple[Path, ...], hidden: tuple[Path, ...]) -> box.Box:
    """A job's child's box: it writes its folder and the object cache, reads its checkouts and the
    precompiled torch headers. Those only read: every later job's binding compiles with them
    (compiling/torch_pch.py), so no job's code may change them."""
    writable = (Path(box_dir), *((Path(options.build_cache_dir),) if options.build_cache_dir else ()))
    pch = options.pch_path
    if pch is not None and any(pch.resolve().is_relative_to(w.resolve()) for w in writable):
        raise box.BoxError(f"the precompiled headers ({pch}) must not lie inside a folder a job writes")
    readable = (*checkouts, *((pch,) if pch is not None and pch.is_dir() else ()))
    return box.Box(writable=writable, readable=readable, hidden=hidden, gpu=True, limits=box.GPU_CHILD_LIMITS)


def _request_box(request: JobRequest, hidden: tuple[Path, ...]) -> box.Box:
    checkouts = tuple(Path(side.path) for side in (request.candidate, request.baseline) if side is not None)
    return child_box(Path(request.artifacts_dir), request.options, checkouts, hidden)


def run_child(request: JobRequest, timeout_s: float,
              on_event: Callable[[ProgressEvent], None] | None = None,
              *, command: list[str] | None = None, hidden: tuple[Path, ...] = (),
              cancel: threading.Event | None = None, budget: Budget | None = None,
              spare: Spare | None = None) -> JobResult:
    """Run one job's stages in a child process and return its `JobResult` (see the module doc).

    The child runs in the box (`gate.box`): it writes only its artifacts and the object
    cache, reads its checkouts, sees the GPU's device nodes, and nothing of `hidden` (the data dir).
    `command` replaces the child's command line (tests use it to stand in a crashing child).
    `cancel`, once set, kills the child's process group and raises `JobCancelled`. `budget` counts
    what the child hands back (its result JSON here; the caller takes the rest with the same budget).
    The result's first note says what bounded the box (its memory: a cgroup or not; its tmpfs; its folder).
    `spare`: a child started before this job (`gate.executors.spare`), whose box was made with this
    request's folders; it is told to go instead of a child being started.
    """
    budget = budget if budget is not None else Budget()
    artifacts = Path(request.artifacts_dir)
    artifacts.mkdir(parents=True, exist_ok=True)
    request_path, result_path = artifacts / REQUEST_NAME, artifacts / RESULT_NAME
    result_path.unlink(missing_ok=True)
    write_request(request_path, request)
    if spare is not None:
        spec, proc, spare_note = spare.spec, spare.proc, spare.note()
        _go(proc)
    else:
        spec = _request_box(request, hidden)
        proc = box.popen(spec, command or child_command(request_path, result_path),
                         cwd=artifacts, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         text=True, errors="replace", start_new_session=True, env=child_env())
    lines: queue.Queue = queue.Queue(maxsize=QUEUED_EVENT_LINES)
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
    readers = [threading.Thread(target=_pump, args=(proc.stdout, lines.put, lines.put), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr, tail.append, None), daemon=True)]
    for reader in readers:
        reader.start()
    running: dict[tuple[str, str], ProgressEvent] = {}
    error: tuple[str, str] | None = None
    timed_out = cancelled = over_disk = False
    deadline = time.monotonic() + timeout_s
    next_disk_check = time.monotonic() + DISK_POLL_S
    try:
        while True:
            left_s = deadline - time.monotonic()
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if left_s <= 0:            # a child that never stops printing times out as well
                timed_out = True
                break
            if time.monotonic() >= next_disk_check:
                next_disk_check = time.monotonic() + DISK_POLL_S
                if usage_bytes(artifacts) > spec.limits.disk_bytes:
                    over_disk = True
                    break
            try:
                line = lines.get(timeout=min(left_s, CANCEL_POLL_S))
            except queue.Empty:
                continue
            if line is _EOF:
                break
            try:
                kind, payload = parse_line(line)
            except ProtocolError:
                tail.append(line)          # stray output on the event channel: keep it as evidence
                continue
            if kind == "error":
                error = payload
                continue
            _track(running, payload)
            if on_event is not None:
                on_event(payload)
        if not timed_out and not cancelled and not over_disk:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        if proc.poll() is None:
            kill_group(proc)
        _drain(lines, readers[0])
        for reader in readers:
            reader.join(timeout=5)
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            if stream is not None:
                stream.close()
    if cancelled:
        raise JobCancelled(f"its child (process group {proc.pid}) was killed")
    # The cgroup kills the biggest process, often a grandchild (a compiler): a child that then fails or
    # hangs failed because the box ran out of memory, and says so; one that still ends cleanly keeps
    # its result (a compile killed this way is already that stage's failure) with a note.
    returncode = box.returncode(proc.returncode)
    oom = proc.memory.oom_killed()
    oom_line = f"had a process killed for passing the box's memory cap ({proc.memory.mechanism})"
    if over_disk:
        killed = f"wrote more than {spec.limits.disk_bytes} bytes into its folder (the box's disk cap)"
    elif oom and (timed_out or returncode != ExitCode.OK):
        killed = oom_line
    elif timed_out:
        killed = f"timed out after {timeout_s:g} s"
    else:
        killed = None
    result = _outcome(request, returncode, killed, running, error, list(tail), artifacts, budget)
    if oom and killed is None:
        result.notes.append(f"the box {oom_line}")
    tmpfs = ("none of its own (unboxed)" if not box.enabled() else f"{spec.limits.tmp_bytes} bytes each"
             if box.sizes_tmpfs() else "not size-capped (bwrap without --size)")
    if spare is not None:
        result.notes.append(spare_note)
    result.notes.insert(0, f"box limits: memory: {proc.memory.mechanism}; tmpfs {tmpfs}; its folder at most "
                           f"{spec.limits.disk_bytes} bytes")
    return result


def _go(proc: subprocess.Popen) -> None:
    """Tell a spare child its request is written. One that already died reads as any dead child."""
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    except (OSError, ValueError):     # its stdin is closed: it exited; the wait below sees how
        pass


def _pump(stream, sink: Callable, on_end: Callable | None) -> None:
    while line := stream.readline(MAX_LINE_CHARS):
        sink(line.rstrip("\n"))
    if on_end is not None:
        on_end(_EOF)


def _drain(lines: queue.Queue, reader: threading.Thread, timeout_s: float = 5.0) -> None:
    """Empty the event queue until its reader ends (it may wait on a full queue after we stopped)."""
    deadline = time.monotonic() + timeout_s
    while reader.is_alive() and time.monotonic() < deadline:
        try:
            lines.get(timeout=0.05)
        except queue.Empty:
            pass


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group (nvcc, ncu and their children included)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if isinstance(proc, box.BoxedPopen):      # and everything in the box's cgroup, at once
        proc.memory.kill_all()
    proc.wait()


def _track(running: dict[tuple[str, str], ProgressEvent], event: ProgressEvent) -> None:
    key = (event.stage, event.side)
    running.pop(key, None)
    if event.state in ("started", "running"):    # "running": a step inside a stage (a source compiled)
        running[key] = event


def _read_result(artifacts: Path, budget: Budget) -> JobResult:
    """The child's result JSON, read across the boundary (`gate.returned_files`)."""
    return from_json(JobResult, json.loads(read_returned(artifacts, RESULT_NAME, budget)))


def _outcome(request: JobRequest, returncode: int, killed: str | None,
             running: dict[tuple[str, str], ProgressEvent], error: tuple[str, str] | None,
             tail: list[str], artifacts: Path, budget: Budget) -> JobResult:
    """`killed`: why the parent (or the box's cgroup) stopped the child, if it did."""
    evidence = "\n".join(tail)
    timed_out = killed is not None
    if not timed_out and returncode == ExitCode.OK:
        try:
            return _read_result(artifacts, budget)
        except (Refused, OSError, ValueError, TypeError) as exc:
            raise RunnerError(f"the child exited cleanly but its result is unreadable: {exc}") from exc
    if not timed_out and returncode == ExitCode.GATE_ERROR and error is not None:
        cls = getattr(gate.errors, error[0], None)
        cls = cls if isinstance(cls, type) and issubclass(cls, GateError) else RunnerError
        raise cls(error[1])
    how = killed if killed is not None else box.how_it_ended(returncode)
    if not timed_out and returncode in (ExitCode.USAGE, ExitCode.BAD_REQUEST, ExitCode.INTERNAL):
        raise RunnerError(f"the gate's child process failed ({how}): {_last_line(tail)}")
    if not running:
        raise RunnerError(f"the child process {how} outside any stage: {_last_line(tail)}")
    (stage, side), last = list(running.items())[-1]
    step = f", {last.detail}" if last.state == "running" and last.detail in (LOADING_MODULE, CAPTURING_GRAPHS) else ""
    return _synthesise(request, artifacts, budget, stage, side, f"child {how} during {stage} ({side}{step})",
                       evidence)


def _last_line(tail: list[str]) -> str:
    lines = [line for line in tail if line.strip()]
    return lines[-1].strip()[:200] if lines else "no output on stderr"


def _synthesise(request: JobRequest, artifacts: Path, budget: Budget, stage: str, side: str, reason: str,
                evidence: str) -> JobResult:
    """The child's last checkpoint (or an empty result) with the running stage marked FAILED."""
    try:
        result = _read_result(artifacts, budget)
    except (Refused, OSError, ValueError, TypeError):
        result = JobResult(kernel=request.kernel.name, candidate=SideResults(sha=request.candidate.sha),
                           baseline=SideResults(sha=request.baseline.sha) if request.baseline else None)
    stage_type = STAGE_RESULT_TYPES.get(stage)
    if stage_type is None:
        raise RunnerError(f"{reason}, but {stage!r} is no stage the gate knows")
    detail = f"{reason}: {_last_line(evidence.splitlines())}"
    failed = stage_type(status=StageStatus.FAILED, reason=detail[:500])
    if hasattr(failed, "log"):
        failed.log = evidence
    if stage == Stage.BENCH:
        result.bench = failed
    else:
        target = result.baseline if side == Side.BASELINE and result.baseline else result.candidate
        setattr(target, stage, failed)
    result.notes.append(f"{reason}; stderr tail:\n{evidence}")
    return result
