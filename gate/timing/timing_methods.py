"""Which method times a shape: events or a CUDA graph (`timing_method`), and whether a graph of a side
times its work (`graph_refused`).

A launch on a default stream is not captured into the graph and raises nothing: the graph replays
nothing, and a 33 % slower commit was accepted (issue 25). Any of three checks refuses the graph:

1. its work nodes (`graph_topology.read_topology` on the kept `cudaGraph_t`) must be at least its
   launches: fewer means calls escaped. (Counting eager launches would need a profiler: seconds.)
2. the replay's time per launch must be at least `GRAPH_MIN_SHARE` of the eager event time: a call
   that lost part of its work keeps its nodes but not its time. Honest graphs read a little less
   (back-to-back launches from a warm L2, up to ~2.5x for a DRAM-bound kernel); a quarter allows it.
3. the graph must be one chain (`GraphTopology.is_chain`): replaying a fork to another stream and its
   join costs what no eager call pays (+18.5 % by graph on an H200, +0.1 to 6 % in plain harnesses,
   bench/fork_join.py). Where the topology cannot be read this check cannot refuse; the notes say so.

A refused graph is timed eagerly with events on the caller's stream (`bench._prepare`), torch's
legacy default stream, whose events bracket a launch on either default stream. The evidence names
the reason (`ShapeTiming.method_note`).
"""

from __future__ import annotations

from gate.timing.graph_topology import GraphTopology

# Sides faster than this are timed as graphs. The estimate is taken with events, which for a call
# dispatched through Python (SDPA: ~30 µs of CPU per call) reads the CPU time, not the GPU's: a 10 µs
# SDPA call estimated at > 20 µs was timed with events on an H200 and showed a 1.5 % A/A bias.
GRAPH_BELOW_US = 60.0
# Launches per graph replay: one count for every graph-timed side in every job. A replay has a fixed
# cost (~4.7 µs) that its launches share, so the per-call figure follows the count: 15.60 µs at 4
# launches, 14.58 at 32 for one ~15 µs kernel (bench/timing_drift.py). A count taken from the estimate
# moved with it, and the estimate reads host time too: rounded up to a power of two, it still gave
# x8 instead of x16 in 2 of 5 "alone" jobs on an H100 (15.04 vs 14.75 µs for one binary, +2 %). At 64
# the fixed cost is under 0.1 µs per call; a replay lasts at most 64 x GRAPH_BELOW_US.
GRAPH_LAUNCHES = 64


def timing_method(gated_estimates_us: list[float]) -> tuple[bool, int]:
    """(use a graph, launches per replay), chosen from the *gated* sides' estimates only: the
    candidate's and, when there is one, the baseline's, never a peer's. The two methods measure
    different things for a kernel that reads much from L2: events time one call from a flushed (cold)
    L2, a graph's back-to-back launches all but the first from a warm one. A fast peer (cuBLAS at
    ~15 µs) used to choose the method of a job with no baseline: a 2048 x 2048 x 1024 WMMA GEMM timed
    alone then read as a graph, 1 to 5 % under its events figure in an A/A job on an H100
    (bench/timing_drift.py). The launches per replay are always GRAPH_LAUNCHES, whatever the estimate."""
    if not gated_estimates_us:
        raise ValueError("timing_method needs the estimate of at least the candidate")
    return min(gated_estimates_us) < GRAPH_BELOW_US, GRAPH_LAUNCHES


GRAPH_MIN_SHARE = 0.25


def graph_refused(label: str, replay_us: float, eager_us: float, work_nodes: int | None, launches: int,
                  topology: GraphTopology | None = None) -> str:
    """Why the graph of side `label` does not time its work ('' when it does). `topology`: the
    shape of its graph, None when it could not be read."""
    if launches < 1:
        raise ValueError(f"a graph of {launches} launches")
    if work_nodes is not None and work_nodes < launches:
        return (f"the {label}'s graph holds {work_nodes} kernel/copy nodes for {launches} calls "
                f"(launches on a default stream escape the capture)")
    if topology is not None and not topology.is_chain:
        return (f"events: the {label}'s captured call forks to another stream (its graph of {launches} calls is "
                f"no single chain: {topology.describe()}); a graph replay would add its joins")
    if eager_us > 0 and replay_us < GRAPH_MIN_SHARE * eager_us:
        return (f"the {label}'s graph replays at {replay_us:.3g} us per call, under {GRAPH_MIN_SHARE:g} x "
                f"its eager {eager_us:.3g} us (work escaped the capture)")
    return ""
