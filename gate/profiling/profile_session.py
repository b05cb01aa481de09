"""An ncu session started ahead of its profile stage, and told to go when the stage comes.

Loading ncu, the profile target's interpreter, torch and the gate (about 3 s on an H100) happens
while the CPU stages run (docs/measurements.md). A session knows nothing of its job until `run`
writes the go, and nothing of the submission runs before it; one whose job died without cancelling
it ends on its own after `WAIT_S`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gate.compiling.toolchain import gate_python_env
from gate.domain import KernelSpec
from gate.domain.codec import to_json
from gate.errors import ProfilerError
from gate.nvidia import ncu_cli
from gate.profiling.ncu_isolated import ReportReader

WAIT_S = 3600.0
# The session's files in its folder: the target's status and go, the report (`-o profile`), ncu's console.
STATUS, GO, REPORT_BASE, LOG = "profile_target_status.json", "go.json", "profile", "ncu.log"


@dataclass
class TargetStatus:
    status: str                    # running | ready | ok | kernel_fault | setup_error
    detail: str = ""
    regions: list[list[str]] = field(default_factory=list)   # [shape label, dtype] entered
    times: dict[str, float] = field(default_factory=dict)    # phase -> when it ended (epoch seconds)


def read_status(path: Path) -> TargetStatus | None:
    """The target's last word (gate/profiling/profile_target.py); None when none or unreadable."""
    try:
        data = json.loads(path.read_text())
        return TargetStatus(status=str(data["status"]), detail=str(data.get("detail", "")),
                            regions=[[str(a), str(b)] for a, b in data.get("regions", [])],
                            times={str(k): float(v) for k, v in data.get("times", {}).items()})
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


@dataclass
class ProfileSession:
    proc: subprocess.Popen
    out_dir: Path
    reader: ReportReader
    ncu: str
    arch: str
    clock_control: str = ""
    marks: dict[str, float] = field(default_factory=dict)   # go, exited: epoch seconds

    @property
    def status_path(self) -> Path:
        return self.out_dir / STATUS

    @property
    def report_path(self) -> Path:
        return self.out_dir / f"{REPORT_BASE}.ncu-rep"

    @classmethod
    def start(cls, out_dir: Path, *, ncu: str, arch: str, clock_control: str,
              workload_factory: str) -> ProfileSession:
        """ncu on `gate.profiling.profile_target`, waiting for its go; the report reader beside it."""
        out_dir.mkdir(parents=True, exist_ok=True)
        for stale in (STATUS, GO, f"{REPORT_BASE}.ncu-rep"):
            (out_dir / stale).unlink(missing_ok=True)
        spec_path = out_dir / "profile_target.json"
        spec_path.write_text(json.dumps({
            "warmup": 3, "status_path": str(out_dir / STATUS),
            "workload_factory": workload_factory, "go_path": str(out_dir / GO), "wait_s": WAIT_S,
        }))
        target = [sys.executable, "-m", "gate.profiling.profile_target", str(spec_path)]
        proc = ncu_cli.start(ncu_cli.command(ncu, arch, clock_control, out_dir / REPORT_BASE, target),
                             out_dir / LOG, env=gate_python_env())
        return cls(proc, out_dir, ReportReader(ncu), ncu, arch, clock_control)

    def serves(self, out_dir: Path, ncu: str, arch: str, clock_control: str) -> bool:
        """Whether this session can be that job's: waiting, same folder, ncu, arch and clock control."""
        return (self.proc.poll() is None and self.out_dir == out_dir and self.ncu == ncu
                and self.arch == arch and self.clock_control == clock_control)

    def ready(self) -> bool | None:
        """True once the target waits for the go with its context up; False when it ended; None while loading."""
        if self.proc.poll() is not None:
            return False
        status = read_status(self.status_path)
        return True if status is not None and status.status == "ready" else None

    def phases(self, times: dict[str, float]) -> str:
        """Where the stage's time went, from the go: the target's marks, ncu's exit, the report read."""
        go = self.marks.get("go", 0.0)
        parts = []
        if "cuda" in times:
            parts.append("CUDA context ready before the go" if times["cuda"] <= go
                         else f"CUDA context {times['cuda'] - go:.1f} s after the go")
        if "profiled" in times:
            parts.append(f"module and profiled calls {times['profiled'] - go:.1f} s")
        if "exited" in self.marks:
            parts.append(f"ncu done at {self.marks['exited'] - go:.1f} s")
        return "from the go: " + ", ".join(parts) if parts else "no phase times"

    def run(self, module_path: str, kernel: KernelSpec, src_dir: Path, timeout_s: float) -> tuple[int, str]:
        """Go: the target profiles `kernel` at `module_path`; ncu's exit code and console output."""
        self.marks["go"] = time.time()
        go = self.out_dir / GO
        tmp = go.with_suffix(".tmp")
        tmp.write_text(json.dumps({"module_path": str(module_path), "kernel": to_json(kernel), "src_dir": str(src_dir)}))
        tmp.rename(go)                       # whole or absent: the target never reads half a go
        try:
            returncode = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.cancel()
            raise ProfilerError(f"ncu did not finish within {timeout_s:.0f} s") from None
        self.marks["exited"] = time.time()
        return returncode, (self.out_dir / LOG).read_text(errors="replace")

    def cancel(self) -> None:
        """Kill ncu and its target (their own process group) and the reader, if still running."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.reader.close()
