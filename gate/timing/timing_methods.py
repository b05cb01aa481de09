"""Which method times a shape: events or a CUDA graph (`timing_method`), and whether a graph of a side
times its work (`graph_refused`; docs/design.md, "One timing method per binary").

A launch on a default stream is not captured into the graph and raises nothing: the graph replays
nothing, and a 33 % slower commit was accepted (issue 25). Counting eager launches would need a
profiler (seconds), so a graph's work nodes are counted instead. A call that lost part of its work
keeps its nodes but not its time: honest graphs read at most ~2.5x under the eager time (warm L2,
DRAM-bound), hence `GRAPH_MIN_SHARE`. A refused graph is timed eagerly on torch's legacy default
stream, whose events bracket a launch on either default stream.
"""

from __future__ import annotations

from gate.timing.graph_topology import GraphTopology

# Sides faster than this are timed as graphs. The estimate is taken with events, which for a call
# dispatched through Python (SDPA: ~30 µs of CPU per call) reads the CPU time, not the GPU's: a 10 µs
# SDPA call estimated at > 20 µs was timed with events on an H200 and showed a 1.5 % A/A bias.
GRAPH_BELOW_US = 60.0
# Launches per graph replay, one count for every graph-timed side in every job: a replay's fixed cost
# (~4.7 µs) is shared by its launches, so the per-call figure follows the count (docs/design.md, "One
# launch count for every graph"). At 64 that cost is under 0.1 µs per call; a replay lasts at most
# 64 x GRAPH_BELOW_US.
GRAPH_LAUNCHES = 64


def timing_method(gated_estimates_us: list[float]) -> tuple[bool, int]:
    """(use a graph, launches per replay), from the *gated* sides' estimates only, never a peer's
    (docs/design.md, "One timing method per binary": a fast peer once moved a GEMM's figure 1 to 5 %)."""
    if not gated_estimates_us:
        raise ValueError("timing_method needs the estimate of at least the candidate")
    return min(gated_estimates_us) < GRAPH_BELOW_US, GRAPH_LAUNCHES


GRAPH_MIN_SHARE = 0.25


def graph_refused(label: str, replay_us: float, eager_us: float, work_nodes: int | None, launches: int,
                  topology: GraphTopology | None = None) -> str:
    """Why the graph of side `label` does not time its work ('' when it does; `topology`: None if unread)."""
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
