"""Issue 25 on a real GPU: the driver reads a captured call's graph as one chain when it stays on the
caller's stream, and as no chain when it forks to a second stream and joins back, on both paths the
bench uses (the kept cudaGraph_t after capture, the capturing stream's graph during it). Torch ops on
torch streams stand in for a kernel's own `cudaEventRecord`/`cudaStreamWaitEvent`: the capture sees
the same event record and wait. `bench/fork_join.py` and tests/gpu/test_timed_integrity.py check what
the bench then does with the extension that forks."""

import pytest

from gate.timing.gpu_timing import _new_graph, _read_topology
from gate.timing.graph_topology import capturing_graph, read_topology

pytestmark = pytest.mark.gpu
CALLS = 8


def _plain(x):
    x.mul_(1.0001)


def _joined(x, side):
    import torch

    side.wait_stream(torch.cuda.current_stream())       # fork: the side stream waits for the caller's
    with torch.cuda.stream(side):
        x.mul_(1.0001)
    torch.cuda.current_stream().wait_stream(side)       # join back before the call returns


def _capture(call, x, during: bool):
    """(topology read during the capture, topology of the kept graph after it)."""
    import torch

    graph, countable = _new_graph()
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        for _ in range(CALLS):
            call(x)
        open_graph = capturing_graph(torch.cuda.current_stream().cuda_stream) if during else None
        during_topology = read_topology(open_graph) if open_graph is not None else None
    kept = _read_topology(graph, countable=True) if countable else None
    return during_topology, kept


def test_calls_on_the_caller_stream_read_as_one_chain_on_both_paths():
    import torch

    x = torch.ones(1 << 20, device="cuda")
    during, kept = _capture(_plain, x, during=True)
    assert during is not None and during.is_chain and during.work_nodes == CALLS, during
    if kept is not None:        # a torch without keep_graph hands out no kept graph
        assert kept.is_chain and kept.work_nodes == CALLS, kept


def test_a_call_that_forks_to_a_second_stream_and_joins_back_reads_as_no_chain():
    import torch

    x, side = torch.ones(1 << 20, device="cuda"), torch.cuda.Stream()
    during, kept = _capture(lambda t: _joined(t, side), x, during=True)
    assert during is not None and not during.is_chain and during.work_nodes == CALLS, during
    if kept is not None:
        assert not kept.is_chain and kept.work_nodes == CALLS, kept
    print(f"\n  joined stream, {CALLS} calls: {during.describe()}")
