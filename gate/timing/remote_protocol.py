"""What the timer needs of a side whose calls run in another process (issue 26, isolated mode).

`gpu_timing.InterleavedTimer` times a `Side` whose `remote` is a `RemoteSide`; `remote_side.RemoteShape`
is the one implementation (a side host, `side_host`), and the tests' fakes are others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gate.timing.graph_topology import GraphTopology


@dataclass(frozen=True)
class RemotePrepared:
    """What a remote side's `prepare` returns: the graph check's inputs (`timing_methods.graph_refused`)."""
    method: str                       # 'graph' or 'events' (its capture failed)
    launches: int
    work_nodes: list[int]
    topologies: list[GraphTopology]
    note: str = ""                    # why its capture failed


class RemoteSide(Protocol):
    """One shape x dtype of a side whose calls run in another process (`remote_side.RemoteShape`), with
    input sets of its own there: each operation is one synchronous request, sent once this process's
    GPU work has finished and answered once the other process's has, so the two never overlap."""

    def estimate_us(self, reps: int) -> float: ...
    def prepare(self, use_graph: bool, launches: int, input_sets: int, keep_output_bytes: int) -> RemotePrepared: ...
    def replay_us(self, reps: int) -> float: ...
    def drop_graphs(self) -> None: ...
    def repetition_us(self, set_index: int) -> float: ...
    def refill(self, set_index: int) -> None: ...
    def reset_persisting_l2(self) -> str: ...   # of its process
