"""Bench stage: candidate vs baseline vs PyTorch's own, interleaved in one process on one GPU.

Per shape x dtype: `INPUT_SETS` input sets shared by all sides, then batches of interleaved rounds
(`gpu_timing`) until both gated medians are known to `target_rel_se_pct` or `bench_budget_s` is spent;
shapes whose interval straddles a latency limit sample again (`_rerun_straddling`). Then the integrity
figures (`all_streams_time`, `roofline`) and the checking pass (`timed_checks`). Every sample is kept;
the comparison comes from `stats`. Issue 25: checked timed calls, refused graphs (`timing_methods`),
pinned clocks (`pinned`); issue 26: a baseline in its own process (`RemoteBaseline`).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, Protocol

from gate.checking.correctness import DTYPE_TOLERANCE
from gate.domain import BenchResult, KernelSpec, ShapeTiming, StageStatus, TimingSamples
from gate.domain.job import CAPTURING_GRAPHS, TIMING, RunOptions, method_key
from gate.nvidia import roofline
from gate.timing import pinned, stats
from gate.timing.all_streams import AllStreams, all_streams_time
from gate.timing.gpu_timing import InterleavedTimer, Side
from gate.timing.graph_topology import GraphTopology
from gate.timing.remote_protocol import RemoteSide
from gate.timing.timed_checks import checks_for, pass_calls
from gate.timing.timing_methods import graph_refused, timing_method

ROUNDS_PER_BATCH = 16
MIN_ROUNDS = 32
# Input sets rotated through the rounds. Two would do against caching by pointer (each set is refilled
# right after its round); three leave a margin against a cache that remembers the last two results.
INPUT_SETS = 3
# Eager calls for the all-streams time: about 2 ms of work, so the first launch's latency and the
# final synchronisation (~20 µs together) stay near 1 % of it.
ALL_STREAMS_WORK_US, ALL_STREAMS_MIN_CALLS, ALL_STREAMS_MAX_CALLS = 2000.0, 3, 64
ISOLATED_NOTE = ("the baseline timed in its own process (a side host: two builds of one op namespace cannot "
                 "share one), every repetition of every side synchronous")
SYNCHRONOUS_NOTE = ("every repetition synchronous, as this kernel's jobs with a baseline are (its sources register "
                    "torch ops: the baseline is timed in its own process)")


class RemoteBaseline(Protocol):
    """The baseline's own process (`remote_side.SideHostClient`): a remote side per shape x dtype, each
    with input sets of its own kept there until the end (a rerun samples an earlier shape again)."""

    def side_for(self, shape_index: int, dtype: str, input_sets: int) -> RemoteSide: ...
    def tampered(self) -> list[str]: ...       # `pinned.tampered()` of its process


@dataclass
class _ShapeRun:
    shape: Any
    dtype: str
    input_sets: list[dict[str, Any]]
    sides: list[Side]
    method: str
    estimate_us: float
    method_note: str = ""
    graph_us: float | None = None
    graph_work_nodes: int | None = None
    eager_us: float | None = None              # the candidate's own estimate (events, cold L2)
    rounds: int = 0
    all_streams: AllStreams | None = None
    floor: roofline.Floor | None = None


def _rerun_straddling(runs: list[_ShapeRun], workload: Any, timer: InterleavedTimer, options: RunOptions,
                      threshold: float | None, compared: bool) -> int:
    """Sample the inconclusive shapes again, twice the budget each time, up to `max_reruns`; the attempts."""
    attempts = 1
    while threshold is not None and compared and attempts <= options.max_reruns:
        straddling = [r for r in runs if _call(r, threshold) == stats.RegressionCall.INCONCLUSIVE]
        if not straddling:
            break
        attempts += 1
        scale = 2 ** (attempts - 1)
        for run in straddling:
            _sample(run, workload, timer, options.bench_budget_s * scale, options.target_rel_se_pct / scale)
    return attempts


def time_revisions(kernel: KernelSpec, workload: Any, candidate_module: Any, baseline_module: Any | None,
                   options: RunOptions, kept_methods: dict[str, str] | None = None,
                   baseline_remote: RemoteBaseline | None = None, synchronous: bool = False,
                   on_step: Callable[[str], None] | None = None, baseline_function: str | None = None) -> BenchResult:
    """`kept_methods`: each shape's history's method, kept unless it cannot give an honest figure.
    `baseline_remote`: the baseline in its own process, instead of `baseline_module`. `synchronous`:
    paced so even without one. `on_step` hears `CAPTURING_GRAPHS` and `TIMING`. `baseline_function`:
    what the baseline's own manifest names (default: `kernel.function`)."""
    import torch

    pinned.pin()     # a no-op when the child pinned before importing the builds, as it does
    start = pinned.now()
    if not torch.cuda.is_available():
        return BenchResult(StageStatus.NOT_RUN, "not run: no CUDA device")
    if baseline_module is not None and baseline_remote is not None:
        raise ValueError("the baseline is either a module here or a remote side, not both")
    timer = InterleavedTimer(seed=secrets.randbits(32), synchronous=synchronous or baseline_remote is not None)
    if baseline_remote is not None:
        timer.notes.append(ISOLATED_NOTE)
    elif synchronous:
        timer.notes.append(SYNCHRONOUS_NOTE)
    runs: list[_ShapeRun] = []
    kept = kept_methods or {}
    try:
        for shape in kernel.shapes:
            for dtype in kernel.dtypes:
                run = _prepare(kernel, workload, candidate_module, baseline_module, shape, dtype, timer,
                               kept.get(method_key(shape.label, dtype)), baseline_remote, on_step or _quiet,
                               baseline_function or kernel.function)
                _sample(run, workload, timer, options.bench_budget_s, options.target_rel_se_pct)
                runs.append(run)
    except Exception as exc:  # noqa: BLE001  a kernel that raises while timed is a kernel fault
        return BenchResult(StageStatus.FAILED, f"raised while timed: {type(exc).__name__}: {exc}"[:2000],
                           pinned.now() - start, tampered=_tampered(baseline_remote))

    compared = (baseline_module or baseline_remote) is not None
    attempts = _rerun_straddling(runs, workload, timer, options, kernel.gates.max_latency_regression_pct, compared)
    traced = pinned.now()
    try:
        _integrity_figures(runs, workload, timer)
        checked_s = _checking_pass(runs)
    except Exception as exc:  # noqa: BLE001  a kernel that raises there is a kernel fault
        return BenchResult(StageStatus.FAILED, f"raised in the all-streams check or the checking pass: "
                           f"{type(exc).__name__}: {exc}"[:2000], pinned.now() - start, tampered=_tampered(baseline_remote))
    shapes = [_timing(r, workload) for r in runs]
    checks = [r.sides[0].checks for r in runs if r.sides[0].checks is not None]
    checked = (f", {sum(c.tally.checked for c in checks)} calls checked ({sum(c.passed_calls for c in checks)} "
               f"in the checking pass, {checked_s:.2f} s) in {sum(c.spent_s for c in checks):.2f} s") if checks else ""
    reason = (f"{len(shapes)} shape(s) timed, integrity figures in {pinned.now() - traced - checked_s:.2f} s{checked}"
              + (f"; {'; '.join(timer.notes)}" if timer.notes else ""))
    return BenchResult(StageStatus.PASSED, reason, pinned.now() - start, shapes, attempts,
                       tampered=_tampered(baseline_remote))


def _quiet(_step: str) -> None:
    pass


def _tampered(remote: RemoteBaseline | None) -> list[str]:
    """The timer's references submitted code replaced, in this process and the baseline's own."""
    names = pinned.tampered()
    if remote is not None:
        try:
            names += [f"{name} (in the baseline's process)" for name in remote.tampered()]
        except Exception:  # noqa: BLE001  the host ended; the bench's reason or the build's says why
            pass
    return names


def _prepare(kernel: KernelSpec, workload: Any, cand: Any, base: Any | None, shape: Any, dtype: str,
             timer: InterleavedTimer, kept_method: str | None = None,
             base_remote: RemoteBaseline | None = None, on_step: Callable[[str], None] = _quiet,
             base_function: str = "") -> _ShapeRun:
    """`base_remote`: the baseline in its own process, in place of `base` (it makes its own input sets)."""
    sets = [workload.make_inputs(shape, dtype, secrets.randbits(31), "cuda") for _ in range(INPUT_SETS)]
    sides = _sides(kernel, workload, cand, base, shape, dtype, sets, base_remote, base_function or kernel.function)
    gated = 2 if base is not None or base_remote is not None else 1   # they alone choose the method
    estimates = [timer.estimate_side_us(s) for s in sides[:gated]]
    use_graph, launches = timing_method(estimates)
    note = ""
    if kept_method in ("graph", "events"):     # the history's method, whatever the estimate says now
        note = f"{kept_method}, as this shape's earlier jobs" if use_graph != (kept_method == "graph") else ""
        use_graph = kept_method == "graph"
    elif kept_method is not None:
        raise ValueError(f"kept timing method {kept_method!r}: expected 'graph' or 'events'")
    for side in sides[gated:]:
        timer.estimate_us(side.fn, reps=1)    # warm-up of the peers (handles, autotuning)
    if use_graph:
        on_step(CAPTURING_GRAPHS)
    method = timer.prepare(sides, use_graph, launches, INPUT_SETS)
    if use_graph:
        on_step(TIMING)
    graph_us = nodes = None
    if method == "graph":
        graph_us = timer.replay_us(sides[0])
        nodes = min(sides[0].work_nodes) if sides[0].work_nodes else None
        # A kept graph is refused as a fresh one is: a graph that escapes or forks gives a figure
        # known not to be the kernel's (a fork's replay read +18.5 % where plain harnesses read +2..6 %,
        # issue 25), and one history of right figures in two methods, the change named in the note,
        # is worth more than one method with a wrong figure in it.
        refused = [why for side, estimate in zip(sides[:gated], estimates)
                   if (why := graph_refused(side.label, timer.replay_us(side) if side is not sides[0] else graph_us,
                                            estimate, min(side.work_nodes) if side.work_nodes else None,
                                            side.launches, _least_chain(side.topologies)))]
        unread = [side.label for side in sides[:gated] if not side.topologies]
        unread_note = (f"the graph of the {', '.join(unread)} could not be read: a call that forks to another "
                       f"stream would not be seen, only the time cross-check applied")
        if unread and not refused and unread_note not in timer.notes:
            timer.notes.append(unread_note)
        if refused:
            timer.drop_graphs(sides)
            method = "events"
            note = "; ".join(refused) + ": timed eagerly with events on the caller's stream (the legacy default " \
                   "stream, which waits for every blocking stream, the per-thread default stream included)"
    return _ShapeRun(shape, dtype, sets, sides, method, min(estimates), note, graph_us, nodes, estimates[0])


def _sides(kernel: KernelSpec, workload: Any, cand: Any, base: Any | None, shape: Any, dtype: str,
           sets: list[dict[str, Any]], base_remote: RemoteBaseline | None, base_function: str) -> list[Side]:
    """The sides of one shape x dtype: the candidate (checked), the baseline, then the workload's peers."""
    def calling(module: Any, function: str) -> Any:
        return lambda i: workload.call(module, function, sets[i])

    sides = [Side("candidate", calling(cand, kernel.function))]
    if callable(getattr(workload, "reference", None)):   # every workload has it (REQUIRED_METHODS)
        sides[0].checks = checks_for(workload, shape, dtype, sets, DTYPE_TOLERANCE, lambda: sides[0].fn(0))
    if base_remote is not None:
        sides.append(Side.of_remote("baseline", base_remote.side_for(kernel.shapes.index(shape), dtype, INPUT_SETS)))
    elif base is not None:
        sides.append(Side("baseline", calling(base, base_function)))
    if sides[0].checks is not None:
        for side in sides:      # both gated sides keep their graph outputs alike (`Side.keep_output_bytes`)
            side.keep_output_bytes = sides[0].checks.output_bytes
    peers = getattr(workload, "peers", None)          # optional for a custom workload
    peer_sets = [peers(shape, inputs) if peers else {} for inputs in sets]
    return sides + [Side(label, lambda i, label=label: peer_sets[i][label]()) for label in peer_sets[0]]


def _least_chain(topologies: list[GraphTopology]) -> GraphTopology | None:
    """Of a side's captures, one that is no single chain if any is (a fork in any capture is the call's)."""
    return next((t for t in topologies if not t.is_chain), topologies[0] if topologies else None)


def _sample(run: _ShapeRun, workload: Any, timer: InterleavedTimer, budget_s: float,
            target_rel_se_pct: float) -> None:
    deadline = pinned.now() + budget_s
    gated = [s for s in run.sides if s.label in ("candidate", "baseline")]

    def refill(i: int) -> None:                # fresh values, same buffers
        workload.refill(run.input_sets[i], secrets.randbits(31))

    while True:
        timer.run_rounds(run.sides, ROUNDS_PER_BATCH, refill, INPUT_SETS)
        run.rounds += ROUNDS_PER_BATCH
        done = all(stats.enough_samples(s.samples_us, target_rel_se_pct, MIN_ROUNDS) for s in gated)
        if done or pinned.now() >= deadline:
            return


def all_streams_calls(estimate_us: float) -> int:
    """Eager calls in the all-streams loop of a call estimated at `estimate_us`: ~`ALL_STREAMS_WORK_US`."""
    calls = math.ceil(ALL_STREAMS_WORK_US / max(estimate_us, 1.0))
    return max(ALL_STREAMS_MIN_CALLS, min(ALL_STREAMS_MAX_CALLS, calls))


def _integrity_figures(runs: list[_ShapeRun], workload: Any, timer: InterleavedTimer) -> None:
    """After all timing: the candidate's time per call on every stream, and its physical floor here."""
    import torch

    peak = roofline.peak_for(torch.cuda.get_device_name())
    if peak is None:
        timer.notes.append(f"no datasheet peaks for {torch.cuda.get_device_name()}: no physical floor")
    for run in runs:
        run.all_streams = all_streams_time(run.sides[0].fn, INPUT_SETS, all_streams_calls(run.estimate_us))
        if peak is not None:
            flops = getattr(workload, "flops", None)
            dram_bytes = getattr(workload, "dram_bytes", None)
            run.floor = roofline.floor_us(peak, run.dtype, flops(run.shape) if flops else None,
                                          dram_bytes(run.shape, run.dtype) if dram_bytes else None,
                                          warm_memory=run.method == "graph")


def _checking_pass(runs: list[_ShapeRun]) -> float:
    """After all timing: the checking pass of every shape's candidate; its seconds."""
    began = pinned.now()
    calls = pass_calls(len(runs))
    for run in runs:
        checks = run.sides[0].checks
        if checks is not None:
            checks.check_pass(run.sides[0].fn, calls)
    return pinned.now() - began


def _call(run: _ShapeRun, threshold_pct: float) -> stats.RegressionCall:
    return stats.regression_call(stats.compare(run.sides[0].samples_us, run.sides[1].samples_us),
                                 threshold_pct)


def _samples(side: Side, flops: float) -> TimingSamples:
    s = stats.summarize(side.samples_us)
    tflops = flops / (s.median_us * 1e-6) / 1e12 if flops and s.median_us > 0 else None
    return TimingSamples(list(side.samples_us), s.median_us, s.p10_us, s.p90_us, tflops)


def _timing(run: _ShapeRun, workload: Any) -> ShapeTiming:
    by_label = {s.label: s for s in run.sides}
    cand = by_label["candidate"]
    flops = workload.flops(run.shape) if hasattr(workload, "flops") else 0.0
    timing = ShapeTiming(
        shape=run.shape.label, dtype=run.dtype, candidate=_samples(cand, flops),
        peers={s.label: _samples(s, flops) for s in run.sides if s.label not in ("candidate", "baseline")},
        rounds=run.rounds, rel_se_pct=stats.median_rel_se_pct(cand.samples_us), method=run.method,
        launches=cand.launches,
        all_streams_us=run.all_streams.per_call_us if run.all_streams else None,
        enqueue_us=run.all_streams.enqueue_us if run.all_streams else None,
        caller_stream_us=run.all_streams.caller_stream_us if run.all_streams else None,
        floor_us=run.floor.floor_us if run.floor else None,
        floor_basis=run.floor.basis if run.floor else "",
        eager_us=run.eager_us, graph_us=run.graph_us, graph_work_nodes=run.graph_work_nodes,
        method_note=run.method_note)
    if cand.checks is not None:
        tally = cand.checks.tally
        timing.timed_checked, timing.timed_wrong = tally.checked, tally.mismatches
        timing.timed_evidence = cand.checks.evidence()
    if "baseline" in by_label:
        timing.baseline = _samples(by_label["baseline"], flops)
        c = stats.compare(cand.samples_us, by_label["baseline"].samples_us)
        timing.ratio, timing.ratio_ci_low, timing.ratio_ci_high, timing.p_value = (
            c.ratio, c.ci_low, c.ci_high, c.p_value)
    return timing
