"""The timing method (graph or events) is chosen by the gated sides only, never by a peer: the same
binary must get the same method, hence the same figure, alone and against a baseline (issue 14). A
graph that escapes, replays far too fast or forks to another stream is refused (issue 25)."""

from types import SimpleNamespace

import pytest

from gate.domain import KernelSpec, Shape
from gate.timing import bench
from gate.timing.gpu_timing import InterleavedTimer
from gate.timing.graph_topology import topology_of
from gate.timing.timing_methods import GRAPH_BELOW_US, GRAPH_LAUNCHES, timing_method

CHAIN = topology_of([0] * GRAPH_LAUNCHES, [(i, i + 1) for i in range(GRAPH_LAUNCHES - 1)])
# A joined private stream: the capture merges the side stream's dependencies into the caller's, so
# each call's kernel depends on every kernel before it (`graph_topology`'s docstring).
JOINED = topology_of([0] * GRAPH_LAUNCHES, [(j, i) for i in range(GRAPH_LAUNCHES) for j in range(i)])


class FakeWorkload:
    """Each call returns the module's time in µs; the fake timer reads it as the estimate."""

    def make_inputs(self, shape, dtype, seed, device):
        return {}

    def call(self, module, function_name, inputs):
        return module.us

    def peers(self, shape, inputs):
        return {"cublas": lambda: 15.0}        # a fast peer, as cuBLAS is beside a slow WMMA GEMM


class FakeTimer:
    """A graph replays at `replay_share` of the eager time and holds `nodes_per_call` work nodes per call;
    its shape is `topologies[label]` (a chain when not named, unreadable when None)."""

    def __init__(self, replay_share=1.0, nodes_per_call=1, topologies=None):
        self.prepared = None
        self.replay_share, self.nodes_per_call = replay_share, nodes_per_call
        self.topologies = topologies or {}
        self.notes = []

    def estimate_us(self, fn, reps=5):
        return fn(0)

    estimate_side_us = InterleavedTimer.estimate_side_us     # a remote side is asked as the real timer asks it

    def prepare(self, sides, use_graph, launches, input_sets):
        self.prepared = ([s.label for s in sides], use_graph, launches)
        if not use_graph:
            return "events"
        for side in sides:
            if side.remote is None:
                side.launches, side.work_nodes = launches, [launches * self.nodes_per_call]
                topology = self.topologies.get(side.label, CHAIN)
                side.topologies = [CHAIN, topology] if topology is not None else []
        return InterleavedTimer._prepare_remote(self, sides, launches, input_sets)

    def replay_us(self, side, reps=5):
        return side.remote.replay_us(reps) if side.remote else side.fn(0) * self.replay_share

    drop_graphs = staticmethod(InterleavedTimer.drop_graphs)


class WorkloadWithoutPeers(FakeWorkload):
    peers = None                              # as a custom workload that declares none


def prepare(cand_us, base_us=None, workload=None, timer=None, kept=None, base_remote=None):
    kernel = KernelSpec(name="k", sources=["k.cu"], workload="gemm", shapes=[Shape({"m": 8}), Shape({"m": 16})])
    timer = timer or FakeTimer()
    base = SimpleNamespace(us=base_us) if base_us is not None else None
    run = bench._prepare(kernel, workload or FakeWorkload(), SimpleNamespace(us=cand_us), base, kernel.shapes[1],
                         "float16", timer, kept, base_remote)
    return run, timer.prepared


def test_a_fast_peer_does_not_choose_graphs_for_a_slow_kernel_alone():
    run, (labels, use_graph, _) = prepare(500.0)
    assert labels == ["candidate", "cublas"]
    assert run.method == "events" and use_graph is False
    assert run.estimate_us == 500.0


def test_the_same_slow_binary_gets_the_same_method_alone_and_against_itself():
    alone, _ = prepare(500.0)
    against_itself, (labels, _, _) = prepare(500.0, 500.0)
    assert labels == ["candidate", "baseline", "cublas"]
    assert alone.method == against_itself.method == "events"


def test_a_workload_without_peers_times_the_kernel_alone():
    run, (labels, _, _) = prepare(500.0, 500.0, WorkloadWithoutPeers())
    assert labels == ["candidate", "baseline"] and [s.label for s in run.sides] == labels


def test_a_launch_bound_gated_side_still_gets_a_graph():
    run, (_, use_graph, launches) = prepare(10.0, 500.0)
    assert run.method == "graph" and use_graph
    assert launches == GRAPH_LAUNCHES


def test_timing_method_bounds():
    assert timing_method([GRAPH_BELOW_US]) == (False, GRAPH_LAUNCHES)
    assert timing_method([GRAPH_BELOW_US - 0.1]) == (True, GRAPH_LAUNCHES)
    with pytest.raises(ValueError, match="at least the candidate"):
        timing_method([])


def test_launches_per_replay_do_not_follow_the_estimate():
    # A ~15 µs kernel whose estimate read 15..26 µs from job to job (host time in the events): the
    # power-of-two count gave 16, or 8 above 25 µs (2 of 5 "alone" jobs on an H100, +2 % per call).
    # Every graph-timed estimate now gets the one count.
    counts = {timing_method([est])[1] for est in (0.3, 1.0, 3.7, 13.0, 15.0, 24.9, 25.1, 26.0, 59.0)}
    assert counts == {GRAPH_LAUNCHES}


def test_a_graph_with_fewer_work_nodes_than_calls_is_refused_for_events():
    # issue 25: launches on the legacy or per-thread default stream escape the capture silently
    run, (_, use_graph, _) = prepare(10.0, 10.0, timer=FakeTimer(nodes_per_call=0))
    assert use_graph and run.method == "events"
    assert "holds 0 kernel/copy nodes for 64 calls" in run.method_note
    assert "timed eagerly with events" in run.method_note
    assert all(s.launches == 1 and not s.graphs for s in run.sides)


def test_a_graph_that_replays_far_under_its_eager_time_is_refused():
    run, _ = prepare(10.0, timer=FakeTimer(replay_share=0.002))   # 0.02 us for a 10 us call
    assert run.method == "events" and "under 0.25 x its eager 10 us" in run.method_note


def test_an_honest_graph_a_little_under_its_eager_time_is_kept():
    run, _ = prepare(10.0, 10.0, timer=FakeTimer(replay_share=0.95))
    assert run.method == "graph" and run.method_note == "" and run.graph_us == 9.5
    assert run.graph_work_nodes == GRAPH_LAUNCHES


def test_the_kept_method_wins_over_the_estimate_either_way():
    # issue 25: a softmax shape near the threshold flipped between events (53.84 us) and graph (51.30)
    near, (_, use_graph, _) = prepare(GRAPH_BELOW_US - 1, kept="events")
    assert near.method == "events" and not use_graph and "as this shape's earlier jobs" in near.method_note
    above, _ = prepare(GRAPH_BELOW_US + 1, kept="graph")
    assert above.method == "graph"


def test_a_kept_graph_that_now_escapes_is_still_refused():
    run, _ = prepare(10.0, kept="graph", timer=FakeTimer(nodes_per_call=0))
    assert run.method == "events" and "nodes" in run.method_note


def test_an_unknown_kept_method_is_named():
    with pytest.raises(ValueError, match="kept timing method 'cupti'"):
        prepare(10.0, kept="cupti")


def test_a_graph_whose_call_forks_to_another_stream_is_refused_for_events():
    # issue 25: a joined private stream read +18.5 % by graph where plain harnesses read +2..6 %
    run, (_, use_graph, _) = prepare(10.0, 10.0, timer=FakeTimer(topologies={"candidate": JOINED}))
    assert use_graph and run.method == "events"
    assert run.method_note.startswith("events: the candidate's captured call forks to another stream")
    assert "up to 63 dependencies" in run.method_note and "a graph replay would add its joins" in run.method_note
    assert all(s.launches == 1 and not s.graphs for s in run.sides)


def test_a_forking_baseline_refuses_the_graph_for_both_sides():
    run, _ = prepare(10.0, 10.0, timer=FakeTimer(topologies={"baseline": JOINED}))
    assert run.method == "events" and "the baseline's captured call forks" in run.method_note


def test_a_fork_found_now_overrides_a_kept_graph_and_says_so():
    run, _ = prepare(10.0, kept="graph", timer=FakeTimer(topologies={"candidate": JOINED}))
    assert run.method == "events" and "forks to another stream" in run.method_note


def test_a_peer_that_forks_does_not_choose_the_method():
    run, _ = prepare(10.0, 10.0, timer=FakeTimer(topologies={"cublas": JOINED}))
    assert run.method == "graph" and run.method_note == ""


def test_an_unreadable_graph_keeps_the_graph_and_says_a_fork_would_not_be_seen():
    timer = FakeTimer(topologies={"candidate": None})
    run, _ = prepare(10.0, 10.0, timer=timer)
    assert run.method == "graph"
    assert timer.notes == ["the graph of the candidate could not be read: a call that forks to another stream "
                           "would not be seen, only the time cross-check applied"]
