"""What a GPU job starts at its beginning so that its GPU stages do not wait for it.

While the static stages compile, a thread of the GPU child starts the torch binding's compile, the
CUDA context and the profile sessions (docs/measurements.md); a spare child starts the sessions in its
warm-up (`start_early`). All of it is only a head start: the build and the profile stage do the same
work themselves when nothing was started, and report their own faults. Nothing here decides anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from gate.compiling import build
from gate.compiling.compile_pool import CompilePool
from gate.compiling.toolchain import device_arch
from gate.domain.job import JobRequest, RunOptions
from gate.domain.names import Side, Stage
from gate.errors import GateError
from gate.nvidia import ncu_cli
from gate.nvidia.devices import common_arch, gpu_nodes
from gate.profiling import profile
from gate.profiling.profile_session import ProfileSession

READY_S = 30.0     # how long the bench waits for a session's CUDA context (seconds after the GPU stages begin)
# Sessions a spare child started before its job, by side (`start_early`), until the job's Ahead takes them.
_early: dict[str, ProfileSession] = {}


def start_early(options: RunOptions, artifacts: Path) -> None:
    """Before its job (a spare child's warm-up): a profile session per side, in the folder its profile
    stage will use. A failure is only a lost head start."""
    if not (options.gpu_stages and options.profile and gpu_nodes() and ncu_cli.find(options.ncu_path)):
        return
    try:
        arch = common_arch() or device_arch()
        for side in (Side.CANDIDATE, Side.BASELINE):
            _early[side] = profile.start_session(artifacts / side / Stage.PROFILE, options, arch=arch)
    except (GateError, OSError):
        pass


def group_pids(pgid: int) -> list[int]:
    """The processes of process group `pgid` (from /proc; [] where there is none)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid:
            pids.append(int(entry.name))
    return pids


class Ahead:
    """`with Ahead(request, pool, cache_dir, gpu_ready):` around the job's stages; `gpu_ready()` (asked in
    the thread) says whether the GPU stages can run here, and may make the CUDA context."""

    def __init__(self, request: JobRequest, pool: CompilePool, cache_dir: Path, gpu_ready: Callable[[], bool]):
        self.request, self.pool, self.cache_dir, self.gpu_ready = request, pool, cache_dir, gpu_ready
        self.sessions: dict[str, ProfileSession] = {}
        self.note = ""                     # why nothing was started ahead, for the log
        self._thread = threading.Thread(target=self._start, name="ahead", daemon=True)

    def __enter__(self) -> Ahead:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join()
        self._cancel_sessions()

    def session(self, side: str) -> ProfileSession | None:
        """The session started for `side`, handed over once (the caller runs or cancels it)."""
        self._thread.join()
        return self.sessions.pop(side, None)

    def wait_ready(self, timeout_s: float = READY_S) -> None:
        """Before the bench (a context being made would share the GPU with timing): every session has its
        CUDA context up, or is cancelled (the profile stage then starts its own)."""
        self._thread.join()
        deadline = time.monotonic() + timeout_s
        for side, session in list(self.sessions.items()):
            while (ready := session.ready()) is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if not ready:
                session.cancel()
                del self.sessions[side]

    def pids(self) -> list[int]:
        """The processes of the sessions waiting now: the job's own, for the bench's GPU watch."""
        self._thread.join()
        return [pid for session in self.sessions.values() for pid in group_pids(session.proc.pid)]

    def _start(self) -> None:
        request, options, kernel = self.request, self.request.options, self.request.kernel
        artifacts = Path(request.artifacts_dir)
        sides = [(Side.CANDIDATE, request.candidate)]
        if request.baseline:
            sides.append((Side.BASELINE, request.baseline))
        profiled = [side for side, _checkout in sides[:1 if not request.profile_baseline else 2]]
        early = dict(_early)     # taken: the job's own from now on
        _early.clear()
        try:
            if not (options.gpu_stages and gpu_nodes()):
                self.note = "no GPU stages here"
                return
            wanted = options.profile and kernel.profile and ncu_cli.find(options.ncu_path)
            # First the sessions, when nvidia-smi names the arch: their interpreter, torch and CUDA
            # context load beside the child's own torch import instead of after it.
            if wanted and (arch := common_arch()):
                self._start_sessions(profiled, arch, early)
            # The binding's compile next (it needs torch's flags: the import, not yet the GPU), then
            # the CUDA context: on a cold cache the compile is the longest wait of the job.
            for side, checkout in sides:
                build.prefetch(request.spec(side), Path(checkout.path), self.cache_dir, artifacts / side / Stage.BUILD,
                               self.pool, nvcc=options.nvcc_path, pch_dir=options.pch_path)
            if not self.gpu_ready():
                self.note = "no GPU stages here"
                self._cancel_sessions()
                return
            if wanted and not self.sessions:
                self._start_sessions(profiled, device_arch(), early)
        except (GateError, OSError) as exc:     # the stages will meet it again and report it
            self.note = f"nothing started ahead: {exc}"
        finally:
            for session in early.values():       # started before the job, for a side it does not profile
                session.cancel()

    def _start_sessions(self, sides: list[str], arch: str, early: dict[str, ProfileSession]) -> None:
        """A session per side: the one started before the job where it serves, else a new one."""
        options, artifacts = self.request.options, Path(self.request.artifacts_dir)
        ncu = ncu_cli.find(options.ncu_path) or ""
        for side in sides:
            out_dir = artifacts / side / Stage.PROFILE
            before = early.pop(side, None)
            if before is not None and before.serves(out_dir, ncu, arch, options.ncu_clock_control):
                self.sessions[side] = before
                continue
            if before is not None:
                before.cancel()
            self.sessions[side] = profile.start_session(out_dir, options, arch=arch)

    def _cancel_sessions(self) -> None:
        for session in self.sessions.values():
            session.cancel()
        self.sessions.clear()
