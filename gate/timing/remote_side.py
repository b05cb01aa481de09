"""The GPU child's end of a side host (`side_host`): start it, ask it, read its end (issue 26).

`SideHostClient.start` starts the host (same interpreter, environment and box, its output in a log
file) and asks it to load the side's build; a load that fails is the side's build failure, with the
error it raised or, when the process died, the signal and the tail of its log ("killed by SIGABRT:
... Only a single TORCH_LIBRARY ..."). The client is the bench's `RemoteBaseline`; its `RemoteShape`s
are the timer's `RemoteSide`s. Before every request it runs `quiesce` (`pinned.synchronize`), and the
host replies with its own work finished, so the two contexts never time-slice the GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate import box
from gate.compiling.toolchain import gate_python_env
from gate.domain import KernelSpec
from gate.domain.codec import to_json
from gate.errors import RunnerError
from gate.timing import side_wire
from gate.timing.graph_topology import GraphTopology
from gate.timing.remote_protocol import RemotePrepared
from gate.timing.side_host import DEFAULT_BACKEND

LOG_TAIL_CHARS = 1500
# How long a host that was asked to close, or whose pipe ended, may take to exit before it is killed.
EXIT_WAIT_S = 30.0


class SideHostError(RuntimeError):
    """The side host answered with an error its side raised, or ended (the message says which)."""


class SideHostClient:
    def __init__(self, process: subprocess.Popen[bytes], requests_fd: int, replies_fd: int, log_path: Path,
                 quiesce: Callable[[], None]):
        self._process, self._requests, self._replies = process, requests_fd, replies_fd
        self._log_path, self._quiesce = log_path, quiesce
        self._closed = False

    @classmethod
    def start(cls, kernel: KernelSpec, module_path: str, workload_dir: Path, log_path: Path,
              quiesce: Callable[[], None], backend: str = DEFAULT_BACKEND) -> SideHostClient:
        """A running host with the side's build loaded; SideHostError (the host closed) when it cannot load."""
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "gate.timing.side_host", "--requests", str(requests_r),
                   "--replies", str(replies_w), "--backend", backend]
        try:
            with open(log_path, "wb") as log:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                           pass_fds=(requests_r, replies_w), env=gate_python_env())
        except OSError as exc:        # no process to be had (the box's process limit): not the side's fault
            for fd in (requests_w, replies_r):
                os.close(fd)
            raise RunnerError(f"could not start the side host: {exc}") from exc
        finally:
            os.close(requests_r)
            os.close(replies_w)
        client = cls(process, requests_w, replies_r, log_path, quiesce)
        try:
            client._request("load", kernel=to_json(kernel), module_path=str(module_path),
                            workload_dir=str(workload_dir))
        except SideHostError:
            client.close()
            raise
        return client

    @property
    def pid(self) -> int:
        return self._process.pid

    def side_for(self, shape_index: int, dtype: str, input_sets: int) -> RemoteShape:
        """The side at one shape x dtype, with `input_sets` input sets made there with its own seeds."""
        run = f"{shape_index}:{dtype}"
        self._request("make_inputs", run=run, shape_index=shape_index, dtype=dtype, input_sets=input_sets)
        return RemoteShape(self, run)

    def tampered(self) -> list[str]:
        return [str(name) for name in self._request("tampered")]

    def close(self) -> None:
        """Ask the host to end, wait for it (killed after `EXIT_WAIT_S`); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            side_wire.send(self._requests, {"op": "close"})
            side_wire.receive(self._replies)
        except (OSError, side_wire.WireError):
            pass                     # it has ended already
        finally:
            os.close(self._requests)
            os.close(self._replies)
            self._wait()

    def _request(self, op: str, **args: Any) -> Any:
        if self._closed:
            raise SideHostError(f"the side host is closed ({op})")
        self._quiesce()
        try:
            side_wire.send(self._requests, {"op": op, "args": args})
            reply = side_wire.receive(self._replies)
        except (OSError, side_wire.WireError):      # BrokenPipeError: it had died before the request
            reply = None
        if reply is None:
            raise SideHostError(self._ended(op))
        if "error" in reply:
            raise SideHostError(str(reply["error"]))
        return reply.get("ok")

    def _wait(self) -> int:
        try:
            return self._process.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            return self._process.wait()

    def _ended(self, op: str) -> str:
        """What ended the host during `op`: the signal or exit status, and the tail of its log."""
        how = box.how_it_ended(self._wait())
        try:
            tail = self._log_path.read_text(encoding="utf-8", errors="replace").strip()[-LOG_TAIL_CHARS:]
        except OSError:
            tail = ""
        return f"its process {how} during {op}" + (f": {tail}" if tail else "")


class RemoteShape:
    """One shape x dtype of the host's side: the bench's `remote_protocol.RemoteSide`."""

    def __init__(self, host: SideHostClient, run: str):
        self._host, self._run = host, run

    def estimate_us(self, reps: int) -> float:
        return float(self._host._request("estimate_us", run=self._run, reps=reps))

    def prepare(self, use_graph: bool, launches: int, input_sets: int, keep_output_bytes: int) -> RemotePrepared:
        got = self._host._request("prepare", run=self._run, use_graph=use_graph, launches=launches,
                                  input_sets=input_sets, keep_output_bytes=keep_output_bytes)
        return RemotePrepared(got["method"], int(got["launches"]), [int(n) for n in got["work_nodes"]],
                              [GraphTopology(**t) for t in got["topologies"]], str(got.get("note", "")))

    def replay_us(self, reps: int) -> float:
        return float(self._host._request("replay_us", run=self._run, reps=reps))

    def drop_graphs(self) -> None:
        self._host._request("drop_graphs", run=self._run)

    def repetition_us(self, set_index: int) -> float:
        return float(self._host._request("repetition_us", run=self._run, set_index=set_index))

    def refill(self, set_index: int) -> None:
        self._host._request("refill", run=self._run, set_index=set_index)

    def reset_persisting_l2(self) -> str:
        return str(self._host._request("reset_persisting_l2"))
