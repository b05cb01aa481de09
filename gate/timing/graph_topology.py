"""The shape of a captured CUDA graph, read with the driver API: its work nodes and whether it is one chain.

Calls captured on one stream make one chain; a fork to another stream and back does not (CUDA C++
Programming Guide, "Cross-stream Dependencies and Events"), and its replay pays for the joins
(docs/threat-model.md, "fork-join on a second stream"). Versioned symbols are called by name because
their signatures are fixed, where cuda.h maps an unversioned name to a newer one per toolkit.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.nvidia.cuda_driver import driver

# CUgraphNodeType (cuda.h): the node types that do a call's work, and the event nodes a fork may leave.
# A launch on the legacy or per-thread default stream during capture is not captured and raises
# nothing: the graph then holds fewer work nodes than it has launches and replays nothing (0.02 µs
# per "call", issue 25); `timing_methods` refuses it by this count.
WORK_NODE_TYPES = (0, 1, 2)          # kernel, memcpy, memset
EVENT_NODE_TYPES = (6, 7)            # wait event, event record


@dataclass(frozen=True)
class GraphTopology:
    nodes: int
    work_nodes: int                  # kernel, memcpy and memset nodes
    edges: int
    roots: int                       # nodes that depend on nothing
    most_dependencies: int           # the most edges into one node
    most_dependents: int             # the most edges out of one node
    event_nodes: int                 # event record / wait nodes

    @property
    def is_chain(self) -> bool:
        """One chain (or nothing), as calls captured on one stream make."""
        return (self.roots <= 1 and self.most_dependencies <= 1 and self.most_dependents <= 1
                and self.event_nodes == 0)

    def describe(self) -> str:
        return (f"{self.nodes} nodes, {self.edges} edges, {self.roots} root(s), up to {self.most_dependencies} "
                f"dependencies and {self.most_dependents} dependents on one node, {self.event_nodes} event nodes")


def topology_of(node_types: Sequence[int], edges: Sequence[tuple[int, int]]) -> GraphTopology:
    """The topology of nodes 0..n-1 of the given types and (from, to) edges between them."""
    n = len(node_types)
    if any(not (0 <= a < n and 0 <= b < n) for a, b in edges):
        raise ValueError(f"an edge names a node outside the graph's {n} nodes")
    into = Counter(b for _, b in edges)
    out = Counter(a for a, _ in edges)
    return GraphTopology(
        nodes=n, work_nodes=sum(t in WORK_NODE_TYPES for t in node_types), edges=len(edges),
        roots=sum(1 for i in range(n) if into[i] == 0), most_dependencies=max(into.values(), default=0),
        most_dependents=max(out.values(), default=0), event_nodes=sum(t in EVENT_NODE_TYPES for t in node_types))


def read_topology(raw_graph: Any) -> GraphTopology | None:
    """The topology of a CUgraph (an integer handle); None when it cannot be read."""
    lib = driver()
    try:
        handle = ctypes.c_void_p(int(raw_graph))
    except (TypeError, ValueError):
        return None
    if lib is None:
        return None
    count = ctypes.c_size_t(0)
    if lib.cuGraphGetNodes(handle, None, ctypes.byref(count)) != 0:
        return None
    nodes = (ctypes.c_void_p * count.value)()
    if count.value and lib.cuGraphGetNodes(handle, nodes, ctypes.byref(count)) != 0:
        return None
    index = {node: i for i, node in enumerate(nodes[:count.value])}
    types = []
    for node in nodes[:count.value]:
        kind = ctypes.c_int(-1)
        if lib.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind)) != 0:
            return None
        types.append(kind.value)
    get_edges = _edges_call(lib)
    n_edges = ctypes.c_size_t(0)
    if get_edges is None or get_edges(handle, None, None, ctypes.byref(n_edges)) != 0:
        return None
    sources, targets = (ctypes.c_void_p * n_edges.value)(), (ctypes.c_void_p * n_edges.value)()
    if n_edges.value and get_edges(handle, sources, targets, ctypes.byref(n_edges)) != 0:
        return None
    try:
        edges = [(index[a], index[b]) for a, b in zip(sources[:n_edges.value], targets[:n_edges.value])]
    except KeyError:
        return None
    return topology_of(types, edges)


def _edges_call(lib: Any) -> Any | None:
    """cuGraphGetEdges as (graph, from, to, count): the _v2 symbol (CUDA >= 12.3, what cuda.h 13 maps
    the name to) with no edge data, else the original one of older drivers; None when neither exists."""
    try:
        v2 = lib.cuGraphGetEdges_v2
        return lambda graph, sources, targets, count: v2(graph, sources, targets, None, count)
    except AttributeError:
        return getattr(lib, "cuGraphGetEdges", None)


def capturing_graph(stream_handle: int) -> int | None:
    """The graph a stream is capturing into (a CUgraph handle), or None."""
    lib = driver()
    if lib is None:
        return None
    status, capture_id, graph = ctypes.c_int(0), ctypes.c_uint64(0), ctypes.c_void_p(None)
    deps, n_deps = ctypes.c_void_p(None), ctypes.c_size_t(0)
    try:
        rc = lib.cuStreamGetCaptureInfo_v2(ctypes.c_void_p(stream_handle), ctypes.byref(status),
                                           ctypes.byref(capture_id), ctypes.byref(graph), ctypes.byref(deps),
                                           ctypes.byref(n_deps))
    except AttributeError:          # a driver without the symbol
        return None
    # CU_STREAM_CAPTURE_STATUS_ACTIVE is 1
    return graph.value if rc == 0 and status.value == 1 and graph.value else None
