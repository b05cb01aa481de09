"""The program Nsight Compute profiles: one call of the kernel per (shape, dtype), after warm-up.

    python -m gate.profiling.profile_target SPEC.json

SPEC (from `profile_session`): {status_path, warmup, workload_factory, go_path, wait_s}. The target
makes its CUDA context, then waits up to wait_s for the go file {module_path, kernel, src_dir}. ncu
runs it with `--profile-from-start off`: only the calls between `cudaProfilerStart/Stop` are
profiled, each in an NVTX range "gate:<shape>:<dtype>" naming its shape. Whatever happens, the
status file says how far it got (`profile_session.TargetStatus`); the exit code says the same.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import time
import traceback
from enum import IntEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from gate.domain import KernelSpec
from gate.domain.codec import from_json, named_object
from gate.nvidia.ncu_report import range_name
from gate.profiling.profile import DEFAULT_WORKLOAD_FACTORY


class TargetExit(IntEnum):
    OK = 0
    USAGE = 2
    KERNEL_FAULT = 3      # the kernel's call raised (CUDA error, bad output shape, ...)
    SETUP_ERROR = 4       # no CUDA device, module not loadable, workload unknown: not the kernel's doing


class _Status:
    """The status file, rewritten after every step so a crash still leaves the last state."""

    def __init__(self, path: Path):
        self.path = path
        self.regions: list[list[str]] = []
        self.times: dict[str, float] = {}     # when each phase ended (time.time()): where the stage's time goes
        self.status = "running"

    def mark(self, phase: str) -> None:
        self.times[phase] = time.time()
        self.write(self.status)

    def write(self, status: str, detail: str = "") -> None:
        self.status = status
        data = {"status": status, "detail": detail, "regions": self.regions, "times": self.times}
        self.path.write_text(json.dumps(data))


def load_module(module_path: str) -> ModuleType:
    """Import a built extension (`name.cpython-...so`, `name.so`) or a Python file by its path."""
    path = Path(module_path)
    name = path.name.split(".", 1)[0]        # PyInit_<name> must match the file's leading name
    if path.suffix == ".py":
        spec = importlib.util.spec_from_file_location(name, path)
    else:
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load a module from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wait_for_go(spec: dict[str, Any], status: _Status) -> dict[str, Any] | None:
    """Wait, before the submission's module is loaded, for the go file; None when none came in `wait_s`."""
    status.write("ready")
    go, deadline = Path(spec["go_path"]), time.monotonic() + float(spec["wait_s"])
    while not go.is_file():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.002)
    return json.loads(go.read_text())


def run(spec: dict[str, Any], status: _Status) -> TargetExit:
    try:
        import torch

        factory = named_object(spec.get("workload_factory") or DEFAULT_WORKLOAD_FACTORY)
        if not torch.cuda.is_available():
            status.write("setup_error", "no CUDA device visible to the profile target")
            return TargetExit.SETUP_ERROR
        torch.empty(1, device="cuda")       # the context, under ncu's injection: before the go when started ahead
        status.mark("cuda")
        go = _wait_for_go(spec, status)
        if go is None:
            status.write("setup_error", f"no go within {spec['wait_s']:.0f} s: the job that started "
                                        "this profile target never asked for its profile")
            return TargetExit.SETUP_ERROR
        status.mark("go")
        kernel = from_json(KernelSpec, go["kernel"])
        module = load_module(go["module_path"])
        workload = factory(kernel, Path(go["src_dir"]))
    except Exception:
        status.write("setup_error", traceback.format_exc(limit=4))
        return TargetExit.SETUP_ERROR
    warmup = int(spec.get("warmup", 3))
    try:
        for shape in kernel.shapes:
            for dtype in kernel.dtypes:
                status.write("running", f"{shape.label}/{dtype}")
                inputs = workload.make_inputs(shape, dtype, 0, "cuda")
                for _ in range(warmup):
                    workload.call(module, kernel.function, inputs)
                torch.cuda.synchronize()
                status.regions.append([shape.label, dtype])
                status.write("running", f"{shape.label}/{dtype}")
                torch.cuda.nvtx.range_push(range_name(shape.label, dtype))
                torch.cuda.profiler.start()
                workload.call(module, kernel.function, inputs)
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
                torch.cuda.nvtx.range_pop()
    except Exception:
        status.write("kernel_fault", traceback.format_exc(limit=4))
        return TargetExit.KERNEL_FAULT
    status.times["profiled"] = time.time()
    status.write("ok")
    return TargetExit.OK


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m gate.profiling.profile_target SPEC.json", file=sys.stderr)
        return TargetExit.USAGE
    spec = json.loads(Path(argv[0]).read_text())
    return int(run(spec, _Status(Path(spec["status_path"]))))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
