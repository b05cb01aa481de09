"""Read an .ncu-rep in a fresh Python process that has not imported torch.

Why: on an H200 (torch 2.11, ncu 2025.3.1's own `extras/python/ncu_report`), `load_report` crashed
with a segmentation fault in a process that had imported torch and run CUDA work (cause not
established). A crash in a reader must not take the GPU child down: here it is a ProfilerError.

    python -m gate.profiling.ncu_isolated REPORT [--ncu NCU]   ->  JSON list of launches on stdout
    python -m gate.profiling.ncu_isolated - [--ncu NCU]        (REPORT's path on stdin: `ReportReader`)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from enum import IntEnum
from pathlib import Path

from gate.compiling.toolchain import gate_python_env
from gate.errors import ProfilerError, ToolMissingError
from gate.nvidia.ncu_report import Launch, import_ncu_report, read_launches
from gate.nvidia.source_counters import RawInstruction


class ReaderExit(IntEnum):
    OK = 0
    PROFILER_ERROR = 2      # the report is missing, unreadable or empty
    TOOL_MISSING = 3        # no ncu_report module


class ReportReader:
    """A reader process started ahead of its report (it loads while ncu profiles); `read` hands it the path."""

    def __init__(self, ncu_path: str = "ncu"):
        self.proc = subprocess.Popen([sys.executable, "-m", "gate.profiling.ncu_isolated", "-", "--ncu", ncu_path],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=gate_python_env())

    def read(self, path: Path, timeout_s: float = 300.0) -> list[Launch]:
        """`read_launches(path)` in the reader; its faults come back as the same exceptions."""
        try:
            stdout, stderr = self.proc.communicate(f"{path}\n", timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.close()
            raise ProfilerError(f"{path}: reading the report took longer than {timeout_s:.0f} s") from None
        message = stderr.strip().splitlines()[-1:] or [f"exit status {self.proc.returncode}"]
        if self.proc.returncode == ReaderExit.TOOL_MISSING:
            raise ToolMissingError(message[0])
        if self.proc.returncode != ReaderExit.OK:
            raise ProfilerError(f"{path}: the report reader failed: {message[0]}")
        return [Launch(**{**d, "nvtx_ranges": tuple(d["nvtx_ranges"]),
                          "instructions": [RawInstruction(**i) for i in d["instructions"]]})
                for d in json.loads(stdout)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gate.profiling.ncu_isolated")
    parser.add_argument("report", help="the .ncu-rep, or - to load ncu's module first and then read its path from stdin")
    parser.add_argument("--ncu", default="ncu")
    args = parser.parse_args(argv)
    try:
        if args.report == "-":
            import_ncu_report(args.ncu)
            args.report = sys.stdin.readline().strip()
        launches = read_launches(Path(args.report), args.ncu)
    except ToolMissingError as exc:
        print(exc, file=sys.stderr)
        return ReaderExit.TOOL_MISSING
    except ProfilerError as exc:
        print(exc, file=sys.stderr)
        return ReaderExit.PROFILER_ERROR
    json.dump([dataclasses.asdict(launch) for launch in launches], sys.stdout)
    return ReaderExit.OK


if __name__ == "__main__":
    sys.exit(main())
