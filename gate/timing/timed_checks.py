"""Checks of the candidate's *timed* calls: the work that was timed is the work that was checked.

Three kernels that computed only part of C on calls after the checked ones were accepted, one 18.5 %
"faster" (issue 25); how the checks work is docs/threat-model.md's ("work skipped on timed calls"). The
bound is the dtype's absolute tolerance: the sharp rule already ran before timing, and skipped work is
off by orders of magnitude, rounding is not. Skipping work on a share f of calls escapes n checks with
probability (1 - f)^n; the figure is a median, so only a large share moves it (half of ~100 calls
escapes with 1.5e-8). A kernel wrong on 1 call in 8 at random leaves the median alone and escaped 8
timed checks with probability 0.34: hence the checking pass after the timing (issue 43).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CHECK_SHARE = 1 / 8
MIN_CHECKED_PER_BATCH = 4
# A graph replay's launches whose outputs are checked when the replay is, drawn among its kept
# launches (`kept_launches`): at most `KEPT_PER_GRAPH` of its 64, within `KEPT_OUTPUT_BYTES` for all
# graphs of a side. Few, because every launch that is not kept reuses one output block as before
# (each kept one writes a block of its own): the honest figure's memory pattern barely changes.
CHECKS_PER_REPLAY = 2
KEPT_PER_GRAPH = 8
KEPT_OUTPUT_BYTES = 1 << 30
# How many mismatches are named in the evidence (the count is always complete).
NAMED_MISMATCHES = 3
# The checking pass: a kernel wrong on CAUGHT_SHARE of its calls at random is caught with probability
# CAUGHT_PROBABILITY, as (1 - share)^n <= 1 - probability needs n >= CHECKED_PER_JOB (146) checked calls.
CAUGHT_SHARE, CAUGHT_PROBABILITY = 1 / 32, 0.99
CHECKED_PER_JOB = math.ceil(math.log(1 - CAUGHT_PROBABILITY) / math.log(1 - CAUGHT_SHARE))


def pass_calls(cases: int) -> int:
    """Calls of the checking pass per shape x dtype of a job of `cases`: `CHECKED_PER_JOB` in all."""
    return math.ceil(CHECKED_PER_JOB / max(1, cases))


def choose_rounds(rounds: int, rng: random.Random) -> set[int]:
    """The rounds of one batch whose candidate call is checked (`CHECK_SHARE`, at least `MIN_CHECKED_PER_BATCH`)."""
    if rounds < 0:
        raise ValueError(f"rounds must be >= 0, got {rounds}")
    chosen = {r for r in range(rounds) if rng.random() < CHECK_SHARE}
    rest = [r for r in range(rounds) if r not in chosen]
    need = min(MIN_CHECKED_PER_BATCH, rounds) - len(chosen)
    if need > 0:
        chosen.update(rng.sample(rest, need))
    return chosen


def kept_launches(launches: int, graphs: int, output_bytes: int, rng: random.Random) -> list[int]:
    """Launch indices of one captured graph whose outputs stay allocated (to be checked), drawn per
    graph at capture, so a device-side schedule (a call counter, the clock) cannot know them."""
    if launches < 1 or graphs < 1:
        raise ValueError(f"need at least one launch and one graph, got {launches} and {graphs}")
    fit = KEPT_OUTPUT_BYTES // max(1, output_bytes * graphs)
    return sorted(rng.sample(range(launches), max(1, min(launches, KEPT_PER_GRAPH, int(fit)))))


def judge(err: float, ref_scale: float, dtype_tolerance: float) -> tuple[bool, float]:
    """(within tolerance, the tolerance) for one checked call's reduced figures."""
    tol = dtype_tolerance * max(1.0, ref_scale if math.isfinite(ref_scale) else 1.0)
    return (math.isfinite(err) and err <= tol), tol


@dataclass
class CheckTally:
    """What the checks of one side found over all its batches."""

    checked: int = 0
    mismatches: int = 0
    named: list[str] = field(default_factory=list)   # the first `NAMED_MISMATCHES`, in call order

    def add(self, call: str, ok: bool, detail: str) -> None:
        self.checked += 1
        if not ok:
            self.mismatches += 1
            if len(self.named) < NAMED_MISMATCHES:
                self.named.append(f"{call}: {detail}")


def _aliased_input(out: Any, inputs: dict[str, Any]) -> str:
    """The name of the input tensor the output lives in (an out-argument), '' when none."""
    import torch

    if not isinstance(out, torch.Tensor):
        return ""
    where = out.untyped_storage().data_ptr()
    for name, t in inputs.items():
        if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() == where:
            return name
    return ""


class TimedChecks:
    """The checks of one side's timed calls at one shape x dtype (see the module docstring)."""

    def __init__(self, workload: Any, shape: Any, dtype: str, input_sets: list[dict[str, Any]],
                 dtype_tolerance: float, reference: Callable[[Any, dict[str, Any]], Any] | None = None):
        self.workload, self.shape, self.dtype = workload, shape, dtype
        self.reference = reference or workload.lowp_reference   # (shape, inputs) -> the expected output
        self.input_sets = input_sets
        self.tolerance = dtype_tolerance
        self.tally = CheckTally()
        self.passed_calls = 0       # of `tally.checked`, the checking pass's
        self.spent_s = 0.0          # host time in poisoning, enqueueing and judging: the checks' cost
        self._out_size: tuple[int, ...] | None = None
        self._out_dtype: Any = None
        self._out_arg = ""
        self._pending: list[tuple[str, Any]] = []      # (call, stacked [err, scale] on the device)
        self._wrong_now: list[tuple[str, str]] = []    # (call, what) found on the host at once

    def learn_output(self, out: Any) -> None:
        """From one untimed call: the output's size and dtype, or the input it is written into."""
        import torch

        if not isinstance(out, torch.Tensor):
            raise TypeError(f"the call returned {type(out).__name__}, not a tensor: its timed outputs "
                            f"cannot be checked")
        self._out_size, self._out_dtype = tuple(out.shape), out.dtype
        self._out_arg = _aliased_input(out, self.input_sets[0])

    @property
    def output_bytes(self) -> int:
        import torch

        if self._out_size is None:
            return 0
        return math.prod(self._out_size) * torch.empty(0, dtype=self._out_dtype).element_size()

    def poison(self, set_index: int) -> None:
        """Before a checked eager call: NaN where its output will be written."""
        import torch

        if self._out_arg:
            target = self.input_sets[set_index][self._out_arg]
            if target.is_floating_point():
                target.fill_(float("nan"))
            return
        if self._out_size is None or not self._out_dtype.is_floating_point:
            return          # no NaN in an integer format: its checks compare values only
        block = torch.full(self._out_size, float("nan"), dtype=self._out_dtype, device="cuda")
        del block   # freed on this stream: the call's same-sized output gets this block

    def poison_kept(self, outputs: list[Any]) -> None:
        """Before a checked graph replay: NaN into the outputs its launches will write."""
        for out in outputs:
            if out.is_floating_point():
                out.fill_(float("nan"))

    def enqueue(self, call: str, out: Any, set_index: int) -> None:
        """After the end event: compare `out` with the expected result on the device (judged in `settle`)."""
        self._compare(call, out, self.reference(self.shape, self.input_sets[set_index]))

    def _compare(self, call: str, out: Any, ref: Any) -> None:
        import torch

        if not isinstance(out, torch.Tensor):
            self._wrong_now.append((call, f"returned {type(out).__name__}, not a tensor"))
            return
        if tuple(out.shape) != tuple(ref.shape):
            self._wrong_now.append((call, f"output shape {tuple(out.shape)}, expected {tuple(ref.shape)}"))
            return
        # Few launches, so the host keeps ahead of the GPU: the difference promotes to the wider dtype,
        # and amax propagates NaN (an unwritten, poisoned element), which `judge` fails.
        err = (out - ref).abs().amax().float()
        self._pending.append((call, torch.stack([err, ref.abs().amax().float()])))

    def check_pass(self, fn: Callable[[int], Any], calls: int) -> None:
        """The checking pass: `calls` eager calls rotating over the sets, each on a poisoned output, against
        its set's expected output (computed once per set: the inputs do not change during the pass)."""
        sets = len(self.input_sets)
        for set_index in range(sets):
            expected = self.reference(self.shape, self.input_sets[set_index])
            for i in range(set_index, calls, sets):
                self.poison(set_index)
                self._compare(f"checking-pass call {i}", fn(set_index), expected)
            del expected
        self.passed_calls += calls
        self.settle()

    def settle(self) -> None:
        """After the batch's synchronisation: judge every pending check into the tally."""
        for call, what in self._wrong_now:
            self.tally.add(call, False, what)
        self._wrong_now = []
        for call, pair in self._pending:
            err, scale = (float(x) for x in pair.tolist())
            ok, tol = judge(err, scale, self.tolerance)
            detail = ("unwritten (NaN/Inf) output elements" if not math.isfinite(err)
                      else f"max |out - expected| {err:.3g} > tol {tol:.3g}")
            self.tally.add(call, ok, detail)
        self._pending = []

    def evidence(self) -> str:
        t = self.tally
        calls = f"{t.checked} call(s) checked in full ({t.checked - self.passed_calls} timed, " \
                f"{self.passed_calls} of the checking pass)"
        if not t.mismatches:
            return f"{calls}, all within the {self.dtype} tolerance"
        return f"{t.mismatches} of {calls} wrong; " + "; ".join(t.named)


def cheaper_reference(workload: Any, shape: Any, inputs: dict[str, Any]) -> Callable[[Any, dict[str, Any]], Any]:
    """The faster of the workload's `reference` and `lowp_reference` (either is right for the absolute
    tolerance): the FMA chain of bench/quality_repo computes PyTorch's result in 4000 launches, its
    reference in three; a large GEMM's float64 reference is the slow one."""
    from gate.timing import pinned

    found = [f for f in (getattr(workload, "reference", None), getattr(workload, "lowp_reference", None))
             if callable(f)]
    if not found:
        raise TypeError(f"{type(workload).__name__} has neither reference nor lowp_reference")
    costs = []
    for fn in found:
        fn(shape, inputs)
        pinned.synchronize()
        start = pinned.now()
        fn(shape, inputs)
        pinned.synchronize()
        costs.append(pinned.now() - start)
    return found[costs.index(min(costs))]


def checks_for(workload: Any, shape: Any, dtype: str, input_sets: list[dict[str, Any]],
               tolerances: dict[str, float], first_output: Callable[[], Any]) -> TimedChecks:
    """A `TimedChecks` for one side, its output learnt from one untimed call (`first_output`)."""
    tolerance = {**tolerances, **getattr(workload, "dtype_tolerance", {})}.get(dtype, 1e-2)
    checks = TimedChecks(workload, shape, dtype, input_sets, tolerance,
                         reference=cheaper_reference(workload, shape, input_sets[0]))
    checks.learn_output(first_output())
    return checks
