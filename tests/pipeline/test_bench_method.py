"""The timing method (graph or events) is chosen by the gated sides only, never by a peer: the same
binary must get the same method, hence the same figure, alone and against a baseline (issue 14)."""

from types import SimpleNamespace

import pytest

from gate.domain import KernelSpec, Shape
from gate.pipeline import bench
from gate.pipeline.gpu_timing import GRAPH_BELOW_US, GRAPH_LAUNCHES, timing_method


class FakeWorkload:
    """Each call returns the module's time in µs; the fake timer reads it as the estimate."""

    def make_inputs(self, shape, dtype, seed, device):
        return {}

    def call(self, module, function_name, inputs):
        return module.us

    def peers(self, shape, inputs):
        return {"cublas": lambda: 15.0}        # a fast peer, as cuBLAS is beside a slow WMMA GEMM


class FakeTimer:
    def __init__(self):
        self.prepared = None

    def estimate_us(self, fn, reps=5):
        return fn(0)

    def prepare(self, sides, use_graph, launches, input_sets):
        self.prepared = ([s.label for s in sides], use_graph, launches)
        return "graph" if use_graph else "events"


class WorkloadWithoutPeers(FakeWorkload):
    peers = None                              # as a custom workload that declares none


def prepare(cand_us, base_us=None, workload=None):
    kernel = KernelSpec(name="k", sources=["k.cu"], workload="gemm", shapes=[Shape({"m": 16})])
    timer = FakeTimer()
    base = SimpleNamespace(us=base_us) if base_us is not None else None
    run = bench._prepare(kernel, workload or FakeWorkload(), SimpleNamespace(us=cand_us), base, kernel.shapes[0],
                         "float16", timer)
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
