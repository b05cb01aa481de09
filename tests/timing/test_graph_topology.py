"""The shape of a captured graph: calls on one stream make one chain, a call that forks does not (issue 25)."""

import pytest

from gate.timing import graph_topology
from gate.timing.graph_topology import topology_of
from gate.timing.timing_methods import graph_refused

KERNEL, EMPTY, WAIT, RECORD = 0, 5, 6, 7


def chain(n):
    return topology_of([KERNEL] * n, [(i, i + 1) for i in range(n - 1)])


def test_calls_on_one_stream_make_one_chain():
    t = chain(64)
    assert t.is_chain and (t.nodes, t.work_nodes, t.edges, t.roots) == (64, 64, 63, 1)
    assert (t.most_dependencies, t.most_dependents) == (1, 1)


def test_an_empty_graph_is_a_chain():
    # launches on a default stream escape the capture: the work-node check refuses that graph instead
    assert topology_of([], []).is_chain


def test_a_joined_stream_leaves_nodes_with_several_dependencies():
    # each call's kernel on the side stream depends on every kernel before it: the caller's stream
    # keeps the union of its dependencies and the joined event's
    t = topology_of([KERNEL] * 4, [(j, i) for i in range(4) for j in range(i)])
    assert not t.is_chain and t.roots == 1
    assert (t.edges, t.most_dependencies, t.most_dependents) == (6, 3, 3)


def test_work_forked_to_two_streams_at_once_has_two_roots():
    t = topology_of([KERNEL, KERNEL, EMPTY], [(0, 2), (1, 2)])
    assert not t.is_chain and t.roots == 2 and t.work_nodes == 2


def test_event_nodes_are_no_chain():
    t = topology_of([KERNEL, RECORD, WAIT, KERNEL], [(0, 1), (1, 2), (2, 3)])
    assert not t.is_chain and t.event_nodes == 2


def test_an_edge_outside_the_graph_is_named():
    with pytest.raises(ValueError, match="outside the graph's 2 nodes"):
        topology_of([KERNEL, KERNEL], [(0, 2)])


def test_a_fork_refuses_the_graph_and_a_chain_does_not():
    forked = topology_of([KERNEL] * 3, [(0, 1), (0, 2), (1, 2)])
    why = graph_refused("candidate", 10.0, 10.0, 3, 3, forked)
    assert why.startswith("events: the candidate's captured call forks to another stream (its graph of 3 calls")
    assert "3 nodes, 3 edges, 1 root(s), up to 2 dependencies and 2 dependents" in why
    assert graph_refused("candidate", 10.0, 10.0, 3, 3, chain(3)) == ""
    assert graph_refused("candidate", 10.0, 10.0, 3, 3, None) == ""    # unreadable: only the other checks


def test_escaped_launches_are_named_before_a_fork():
    forked = topology_of([KERNEL, KERNEL], [])      # two roots
    assert "escape the capture" in graph_refused("candidate", 10.0, 10.0, 2, 4, forked)


class FakeDriver:
    """libcuda's graph calls over nodes of the given types and (from, to) edges, handles as addresses."""

    def __init__(self, types, edges, fail=""):
        self.types, self.edges, self.fail = types, edges, fail
        self.handles = [0x1000 + 16 * i for i in range(len(types))]

    def cuGraphGetNodes(self, graph, out, count):
        if out is not None:
            for i, handle in enumerate(self.handles):
                out[i] = handle
        count._obj.value = len(self.handles)
        return 0

    def cuGraphNodeGetType(self, node, kind):
        kind._obj.value = self.types[self.handles.index(node.value)]
        return 0

    def cuGraphGetEdges_v2(self, graph, sources, targets, edge_data, count):
        if self.fail == "edges":
            return 1          # CUDA_ERROR_INVALID_VALUE
        assert edge_data is None
        if sources is not None:
            for i, (a, b) in enumerate(self.edges):
                sources[i], targets[i] = self.handles[a], self.handles[b]
        count._obj.value = len(self.edges)
        return 0


def test_the_driver_s_nodes_and_edges_are_read_into_a_topology(monkeypatch):
    monkeypatch.setattr(graph_topology, "driver", lambda: FakeDriver([KERNEL, KERNEL, KERNEL],
                                                                      [(0, 1), (0, 2), (1, 2)]))
    t = graph_topology.read_topology(0x42)
    assert (t.nodes, t.work_nodes, t.edges, t.most_dependencies, t.most_dependents) == (3, 3, 3, 2, 2)
    assert not t.is_chain


def test_a_failing_driver_call_reads_as_unknown_not_as_a_chain(monkeypatch):
    monkeypatch.setattr(graph_topology, "driver", lambda: FakeDriver([KERNEL], [], fail="edges"))
    assert graph_topology.read_topology(0x42) is None
    monkeypatch.setattr(graph_topology, "driver", lambda: None)       # libcuda not loadable
    assert graph_topology.read_topology(0x42) is None and graph_topology.capturing_graph(7) is None
