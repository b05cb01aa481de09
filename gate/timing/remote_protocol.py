"""What the timer needs of a side whose calls run in another process (issue 26, isolated mode):
`remote_side.RemoteShape`, or the tests' fakes."""

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
    """One shape x dtype of a remote side, with input sets of its own there: each operation is one
    synchronous request, sent and answered with both processes' GPU work finished."""

    def estimate_us(self, reps: int) -> float: ...
    def prepare(self, use_graph: bool, launches: int, input_sets: int, keep_output_bytes: int) -> RemotePrepared: ...
    def replay_us(self, reps: int) -> float: ...
    def drop_graphs(self) -> None: ...
    def repetition_us(self, set_index: int) -> float: ...
    def refill(self, set_index: int) -> None: ...
    def reset_persisting_l2(self) -> str: ...   # of its process
