"""Interleaved GPU timing of several callables ("sides"), the measuring core of `bench.py`.

One *round* runs every side once, in an order drawn per round, on one of several input sets (rotating,
refilled right after their round: docs/threat-model.md). Each repetition is

    [reset persisting L2 once per batch]  L2 flush  hold  start-event  side(set)  end-event  release

A batch is enqueued before its one synchronisation, so only its first call follows an idle GPU
(docs/design.md, "Figures that mean the same from job to job"). Isolated mode (issue 26; docs/design.md,
"Isolated pacing"): beside a *remote* side, timed in `side_host`, every repetition is synchronous:

    sync  [remote: request -> flush x4 start-event side(set) end-event sync -> reply]
    sync  [local:            flush x4 start-event side(set) end-event wait]
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gate.nvidia.cuda_driver import runtime
from gate.timing import pinned
from gate.timing.gpu_hold import Hold
from gate.timing.graph_topology import GraphTopology, capturing_graph, read_topology
from gate.timing.remote_protocol import RemotePrepared, RemoteSide
from gate.timing.timed_checks import CHECKS_PER_REPLAY, TimedChecks, choose_rounds, kept_launches

# Captures per side, one drawn at random per round (see `InterleavedTimer.prepare`).
GRAPHS_PER_SIDE = 4
# L2 flushes before each synchronous repetition (isolated mode): work on every SM right before a call
# takes away the penalty of the idle gap it follows (docs/design.md, "Isolated pacing"). One flush
# writes 2 x L2 (~30 µs on an H100); four give ~120 µs of such work, the same on both sides.
SYNCHRONOUS_FLUSHES = 4


def reset_persisting_l2() -> str:
    """`cudaCtxResetPersistingL2Cache` through ctypes; returns a note when it is unavailable."""
    lib = runtime()
    if lib is None:
        return "persisting L2 not reset: libcudart not loadable"
    rc = lib.cudaCtxResetPersistingL2Cache()
    return "" if rc == 0 else f"cudaCtxResetPersistingL2Cache returned {rc}"


def _remote_only(set_index: int) -> Any:
    raise RuntimeError("a remote side has no call in this process")


@dataclass
class Side:
    label: str
    fn: Callable[[int], Any]          # fn(input_set_index) -> output
    samples_us: list[float] = field(default_factory=list)
    launches: int = 1                 # per timed repetition (graph method: launches per replay)
    graphs: list[Any] = field(default_factory=list)   # captured torch.cuda.CUDAGraphs when timed as graphs
    checks: TimedChecks | None = None  # the candidate's: its timed calls' outputs are checked
    # Bytes of one output when the side's graph launches keep their outputs allocated (0: they do
    # not). The candidate's kept outputs are what its checks read; the baseline keeps as many, so
    # both write to as many distinct blocks per replay (their L2 write-backs alike: no A/A bias).
    keep_output_bytes: int = 0
    # Per graph, the outputs its launches write that stay allocated: (launch index, input set, tensor).
    kept: list[list[tuple[int, int, Any]]] = field(default_factory=list)
    work_nodes: list[int] = field(default_factory=list)   # per graph: kernel/memcpy/memset nodes captured
    topologies: list[GraphTopology] = field(default_factory=list)   # per graph whose shape could be read
    held: bool = True                 # its repetitions wait behind a hold (`gpu_hold`) until enqueued
    remote: RemoteSide | None = None  # timed in its own process (isolated mode); `fn` is then unused

    @classmethod
    def of_remote(cls, label: str, remote: RemoteSide) -> Side:
        return cls(label, _remote_only, remote=remote)


def _new_graph() -> tuple[Any, bool]:
    """(a CUDAGraph, whether its nodes can be read after capture: `keep_graph=True`, torch >= 2.8)."""
    import torch

    try:
        graph = torch.cuda.CUDAGraph(keep_graph=True)
    except TypeError:
        return torch.cuda.CUDAGraph(), False
    return graph, callable(getattr(graph, "raw_cuda_graph", None)) and callable(getattr(graph, "instantiate", None))


def _read_topology(graph: Any, countable: bool) -> GraphTopology | None:
    """The topology of a captured graph (of the one being captured, inside the capture, unless
    `countable`); None when unreadable: that must not turn an honest graph into an events-timed shape."""
    import torch

    try:
        raw = graph.raw_cuda_graph() if countable else capturing_graph(torch.cuda.current_stream().cuda_stream)
        return read_topology(raw) if raw is not None else None
    except Exception:  # noqa: BLE001  a beta API: whatever it raises, the time cross-check still applies
        return None


class InterleavedTimer:
    # Every repetition synchronous, as beside a remote side: a kernel isolated in its jobs with a
    # baseline is paced so alone too, so that its history means one thing.
    synchronous = False

    def __init__(self, seed: int | None = None, synchronous: bool = False):
        import torch

        self.synchronous = synchronous

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2_bytes = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
        self._flush = torch.empty(2 * l2_bytes // 4, dtype=torch.int32, device="cuda")
        self._rng = random.Random(seed)
        # Which timed calls are checked: from os.urandom, never from the shuffling seed or a counter.
        self._check_rng = random.SystemRandom()
        self._next_set = 0
        self.notes: list[str] = []
        self._hold, why = Hold.create()
        if self._hold is None:
            self.notes.append(f"timed without the hold ({why}): a host slower than the GPU reads as kernel time")

    def flush_l2(self) -> None:
        self._flush.zero_()

    def estimate_side_us(self, side: Side, reps: int = 5) -> float:
        """`estimate_us` of a side, in its own process when it is remote."""
        return side.remote.estimate_us(reps) if side.remote is not None else self.estimate_us(side.fn, reps)

    def estimate_us(self, fn: Callable[[int], Any], reps: int = 5) -> float:
        """Warm up `fn` and return its median time (events, L2 flushed) over `reps` calls."""
        for _ in range(3):
            fn(0)
        return self._median_us(lambda: fn(0), reps, 1)

    def replay_us(self, side: Side, reps: int = 5) -> float:
        """Median time per launch of `reps` replays of `side`'s first graph (L2 flushed before each)."""
        if side.remote is not None:
            return side.remote.replay_us(reps)
        return self._median_us(side.graphs[0].replay, reps, side.launches)

    def _median_us(self, run: Callable[[], Any], reps: int, launches: int) -> float:
        times = []
        for _ in range(reps):
            self.flush_l2()
            start, end = pinned.new_event(), pinned.new_event()
            pinned.record(start)
            run()
            pinned.record(end)
            pinned.wait(end)
            times.append(pinned.elapsed_ms(start, end) * 1e3 / launches)
        return sorted(times)[len(times) // 2]

    def prepare(self, sides: list[Side], use_graph: bool, launches: int, input_sets: int) -> str:
        """Capture each side as graphs of `launches` calls over the input sets; 'graph' or 'events'."""
        import torch

        if not use_graph:
            return "events"
        # One memory pool for every side's graph: each side's outputs then live at the same addresses,
        # as they do in eager timing (the caching allocator hands the block a side just freed to the
        # next side). Sharing is safe: the graphs replay one after another on one stream.
        # Each side is captured GRAPHS_PER_SIDE times and every round replays one drawn at random: one
        # captured graph of a call runs steadily a few tenths of a percent faster or slower than
        # another capture of the same call, so with one graph per side, 20 A/A trials at ~15 µs on an
        # H100 showed shifts of up to 0.5 % (SDPA against itself: 1.3 %) with p < 0.05 in most
        # trials. Drawing among several makes that a part of each side's spread, not a fixed offset.
        # A checked side keeps some of its launches' outputs allocated (`kept_launches`), so that a
        # replay's work can be checked after it; keep_graph=True leaves the graph countable.
        pool = torch.cuda.graph_pool_handle()
        try:
            for side in sides:
                if side.remote is not None:
                    continue
                side.graphs, side.kept, side.work_nodes, side.topologies = [], [], [], []
                for _ in range(GRAPHS_PER_SIDE):
                    keep = set(kept_launches(launches, GRAPHS_PER_SIDE, side.keep_output_bytes,
                                             self._check_rng)) if side.keep_output_bytes else set()
                    graph, countable = _new_graph()
                    kept = []
                    with torch.cuda.graph(graph, pool=pool):
                        for i in range(launches):
                            out = side.fn(i % input_sets)
                            if i in keep:
                                kept.append((i, i % input_sets, out))
                        # without the kept graph, the one being captured is read while it is open
                        topology = None if countable else _read_topology(graph, countable=False)
                    if countable:
                        topology = _read_topology(graph, countable=True)
                        graph.instantiate()
                    graph.replay()
                    side.graphs.append(graph)
                    side.kept.append(kept)
                    if topology is not None:
                        side.work_nodes.append(topology.work_nodes)
                        side.topologies.append(topology)
                side.launches = launches
            torch.cuda.current_stream().synchronize()
        except RuntimeError as exc:   # a side that syncs or allocates on the host cannot be captured
            self.drop_graphs(sides)
            self.notes.append(f"CUDA graph capture failed, timed with events: {str(exc)[:200]}")
            return "events"
        return self._prepare_remote(sides, launches, input_sets)

    def _prepare_remote(self, sides: list[Side], launches: int, input_sets: int) -> str:
        """The remote sides capture their own graphs, once the local ones could: one method for all."""
        for side in sides:
            if side.remote is None:
                continue
            prepared = side.remote.prepare(True, launches, input_sets, side.keep_output_bytes)
            if prepared.method != "graph":
                self.drop_graphs(sides)
                self.notes.append(f"CUDA graph capture failed in the {side.label}'s process, timed with events: "
                                  f"{prepared.note[:200]}")
                return "events"
            side.launches, side.work_nodes = prepared.launches, prepared.work_nodes
            side.topologies = prepared.topologies
        return "graph"

    @staticmethod
    def drop_graphs(sides: list[Side]) -> None:
        for side in sides:
            if side.remote is not None:
                side.remote.drop_graphs()
            side.graphs, side.kept, side.work_nodes, side.topologies, side.launches = [], [], [], [], 1

    def run_rounds(self, sides: list[Side], rounds: int, refill: Callable[[int], None],
                   input_sets: int) -> None:
        """`rounds` interleaved rounds (module docstring), one sample per side each; `refill(set_index)`
        right after a set's round. A side with `checks` has its calls checked in the rounds
        `choose_rounds` draws (`timed_checks`). Synchronous beside a remote side: both sides' flushes
        before each repetition must be the same."""
        if not self.synchronous and any(side.remote is not None for side in sides):
            raise ValueError("a remote side needs a synchronous timer (both sides paced alike)")
        isolated = self.synchronous
        for note in [reset_persisting_l2()] + [s.remote.reset_persisting_l2() for s in sides if s.remote]:
            if note and note not in self.notes:
                self.notes.append(note)
        checked = {side.label: choose_rounds(rounds, self._check_rng) for side in sides if side.checks}
        first_call = {side.label: len(side.samples_us) for side in sides}
        pending: list[tuple[Side, Any, Any, int]] = []
        waited: list[tuple[Side, int]] = []      # isolated mode: (side, hold ticket) of each repetition
        for round_index in range(rounds):
            order = sides[:]
            self._rng.shuffle(order)
            current = self._next_set
            self._next_set = (current + 1) % input_sets
            for side in order:
                if not isolated:
                    pending.append((side, *self._enqueue(side, current, round_index in checked.get(side.label, ()),
                                                         first_call[side.label] + round_index)))
                    continue
                if side.remote is not None:     # its client synchronises this process first
                    side.samples_us.append(side.remote.repetition_us(current))
                    continue
                pinned.synchronize()            # as before a remote one: same pacing for both sides
                start, end, ticket = self._enqueue(side, current, round_index in checked.get(side.label, ()),
                                                   first_call[side.label] + round_index)
                pinned.wait(end)
                side.samples_us.append(pinned.elapsed_ms(start, end) * 1e3 / side.launches)
                waited.append((side, ticket))
            refill(current)
            for side in sides:
                if side.remote is not None:
                    side.remote.refill(current)
        if pending:
            pinned.wait(pending[-1][2])
        for side, start, end, _ticket in pending:
            side.samples_us.append(pinned.elapsed_ms(start, end) * 1e3 / side.launches)
        self._unhold_waiting_sides([(side, ticket) for side, _start, _end, ticket in pending] + waited)
        for side in sides:
            if side.checks is not None:
                began = pinned.now()
                side.checks.settle()
                side.checks.spent_s += pinned.now() - began

    def repetition_us(self, side: Side, set_index: int) -> float:
        """One synchronous repetition of an unchecked local side (a side host's request): µs per launch."""
        start, end, _ticket = self._enqueue(side, set_index, False, 0)
        pinned.wait(end)
        return pinned.elapsed_ms(start, end) * 1e3 / side.launches

    def _enqueue(self, side: Side, current: int, checking: bool, call_index: int) -> tuple[Any, Any, int]:
        """One repetition of a local side on set `current` (a random graph of it when timed as graphs);
        its (start, end) events and its hold's ticket (0: not held)."""
        checking = checking and side.checks is not None
        kept = self._rng.randrange(len(side.graphs)) if side.graphs else -1
        chosen: list[tuple[int, int, Any]] = []
        if checking and side.checks is not None:
            began = pinned.now()
            if side.graphs:     # only the launches to be checked: a few fills, not 64
                chosen = self._check_rng.sample(side.kept[kept], min(CHECKS_PER_REPLAY, len(side.kept[kept])))
                side.checks.poison_kept([launch_out for _, _, launch_out in chosen])
            else:
                side.checks.poison(current)
            side.checks.spent_s += pinned.now() - began
        for _ in range(SYNCHRONOUS_FLUSHES if self.synchronous else 1):
            self.flush_l2()
        ticket = self._hold.hold() if self._hold is not None and side.held else 0
        start, end = pinned.new_event(), pinned.new_event()
        pinned.record(start)
        out = None
        if side.graphs:
            side.graphs[kept].replay()
        else:
            out = side.fn(current)
        pinned.record(end)              # the checks below are outside the timed interval
        if ticket:
            self._hold.release(ticket)
        if checking and side.checks is not None:
            began = pinned.now()
            call = f"timed call {call_index}"
            if side.graphs:
                for launch, set_index, launch_out in chosen:
                    side.checks.enqueue(f"{call}, launch {launch} of its graph replay", launch_out, set_index)
            else:
                side.checks.enqueue(call, out, current)
            side.checks.spent_s += pinned.now() - began
        del out
        return start, end, ticket

    def _unhold_waiting_sides(self, tickets: list[tuple[Side, int]]) -> None:
        """A side whose call timed its hold out (it waits for the GPU while enqueued) is not held from now on."""
        if self._hold is None:
            return
        gave_up = self._hold.timed_out()
        for side, ticket in tickets:
            if gave_up and ticket == gave_up and side.held:
                side.held = False
                self.notes.append(f"the {side.label}'s call waits for the GPU while it is enqueued: timed "
                                  f"without the hold, so host time between its events counts as its own")
