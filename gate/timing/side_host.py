"""The side host: one side of a job, loaded and timed in a process of its own (issue 26).

Why (docs/design.md, "Two builds of one op namespace in two processes"): torch keeps one op registry
per process. The GPU child starts it for the baseline and times it through `remote_side`:

    python -m gate.timing.side_host --requests FD --replies FD [--backend module:factory]

It serves one request (`side_wire` frames, an operation of `OPERATIONS`) at a time until `close` or
the end of its pipe, replying `{"ok": value}` or `{"error": "<type>: <message>"}` once its GPU work
has finished (`idle`). `--backend` names another factory than `GpuSide`: tests drive the real process
with fake GPU operations.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import sys
from pathlib import Path
from typing import Any, Protocol

from gate.domain.codec import named_object
from gate.timing import pinned, side_wire
from gate.timing.gpu_timing import InterleavedTimer, Side, reset_persisting_l2

DEFAULT_BACKEND = "gate.timing.side_host:GpuSide"
# What a request may ask; each is a method of the backend, with the request's "args" as keywords.
OPERATIONS = frozenset({"load", "make_inputs", "estimate_us", "prepare", "replay_us", "drop_graphs",
                        "repetition_us", "refill", "reset_persisting_l2", "tampered"})


class SideBackend(Protocol):
    """The GPU operations of one side (`GpuSide`; tests replace it). `run` names one shape x dtype's
    input sets and graphs, all kept until the host ends (a rerun times one again)."""

    def load(self, kernel: dict[str, Any], module_path: str, workload_dir: str) -> None: ...
    def make_inputs(self, run: str, shape_index: int, dtype: str, input_sets: int) -> None: ...
    def estimate_us(self, run: str, reps: int) -> float: ...
    def prepare(self, run: str, use_graph: bool, launches: int, input_sets: int,
                keep_output_bytes: int) -> dict[str, Any]: ...
    def replay_us(self, run: str, reps: int) -> float: ...
    def drop_graphs(self, run: str) -> None: ...
    def repetition_us(self, run: str, set_index: int) -> float: ...
    def refill(self, run: str, set_index: int) -> None: ...
    def reset_persisting_l2(self) -> str: ...
    def tampered(self) -> list[str]: ...
    def idle(self) -> None: ...


class GpuSide:
    """The side on the GPU: its build, the workload, input sets and a timer of this process's own."""

    def __init__(self) -> None:
        self._kernel: Any = None
        self._module: Any = None
        self._workload: Any = None
        self._timer: Any = None
        self._runs: dict[str, tuple[list[Any], Any]] = {}      # run -> (input sets, gpu_timing.Side)

    def load(self, kernel: dict[str, Any], module_path: str, workload_dir: str) -> None:
        from gate.checking import workloads
        from gate.compiling import build
        from gate.domain import KernelSpec
        from gate.domain.codec import from_json

        pinned.pin()          # before the build's initialisers run, as in the GPU child (`pinned`)
        self._kernel = from_json(KernelSpec, kernel)
        self._module = build.load_module(module_path)
        self._workload = workloads.get_workload(self._kernel, Path(workload_dir))
        self._timer = InterleavedTimer(seed=secrets.randbits(32), synchronous=True)   # paced as the child's

    def make_inputs(self, run: str, shape_index: int, dtype: str, input_sets: int) -> None:
        shape = self._kernel.shapes[shape_index]
        sets = [self._workload.make_inputs(shape, dtype, secrets.randbits(31), "cuda") for _ in range(input_sets)]
        side = Side("baseline", lambda i: self._workload.call(self._module, self._kernel.function, sets[i]))
        self._runs[run] = (sets, side)

    def estimate_us(self, run: str, reps: int) -> float:
        return self._timer.estimate_us(self._runs[run][1].fn, reps)

    def prepare(self, run: str, use_graph: bool, launches: int, input_sets: int,
                keep_output_bytes: int) -> dict[str, Any]:
        side = self._runs[run][1]
        side.keep_output_bytes = keep_output_bytes
        notes = len(self._timer.notes)
        method = self._timer.prepare([side], use_graph, launches, input_sets)
        return {"method": method, "launches": side.launches, "work_nodes": list(side.work_nodes),
                "topologies": [dataclasses.asdict(t) for t in side.topologies],
                "note": "; ".join(self._timer.notes[notes:])}

    def replay_us(self, run: str, reps: int) -> float:
        return self._timer.replay_us(self._runs[run][1], reps)

    def drop_graphs(self, run: str) -> None:
        self._timer.drop_graphs([self._runs[run][1]])

    def repetition_us(self, run: str, set_index: int) -> float:
        return self._timer.repetition_us(self._runs[run][1], set_index)

    def refill(self, run: str, set_index: int) -> None:
        self._workload.refill(self._runs[run][0][set_index], secrets.randbits(31))

    def reset_persisting_l2(self) -> str:
        return reset_persisting_l2()

    def tampered(self) -> list[str]:
        return pinned.tampered()

    def idle(self) -> None:
        if self._timer is not None:
            pinned.synchronize()


def serve(backend: SideBackend, requests_fd: int, replies_fd: int) -> None:
    """Answer requests until `close` or the end of the request pipe."""
    while (request := side_wire.receive(requests_fd)) is not None:
        op = request.get("op")
        if op == "close":
            side_wire.send(replies_fd, {"ok": None})
            return
        if op not in OPERATIONS:
            side_wire.send(replies_fd, {"error": f"ValueError: no operation {op!r}"})
            continue
        reply: dict[str, Any]
        try:
            reply = {"ok": getattr(backend, op)(**request.get("args", {}))}
        except Exception as exc:  # noqa: BLE001  the side's code raised: the GPU child decides what it means
            reply = _error(exc)
        try:
            backend.idle()          # also after an error: the GPU child's next request must find it idle
        except Exception as exc:  # noqa: BLE001  an asynchronous CUDA error surfaces here
            reply = _error(exc)
        side_wire.send(replies_fd, reply)


def _error(exc: Exception) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}"[:4000]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gate.timing.side_host")
    parser.add_argument("--requests", type=int, required=True, help="file descriptor of the request pipe")
    parser.add_argument("--replies", type=int, required=True, help="file descriptor of the reply pipe")
    parser.add_argument("--backend", default=DEFAULT_BACKEND, help="module:factory of the side's operations")
    args = parser.parse_args(argv)
    serve(named_object(args.backend)(), args.requests, args.replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
