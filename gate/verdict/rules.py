"""Rule rows of the GPU stages (correctness, latency, integrity, Nsight Compute), for `decide`. Pure
functions; the ncu rows are generic over the catalogue's `ncu absolute` and `ncu relative` rows."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from gate.domain.launches import by_shape, shape_figure
from gate.domain.manifest import Gates, threshold_of
from gate.domain.results import (
    BenchResult,
    CorrectnessCase,
    CorrectnessResult,
    ProfileResult,
    ShapeTiming,
    StageStatus,
)
from gate.domain.rule_catalog import Bound, Kind, Rule, RuleSpec, of_kind
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.domain.wording import format_value
from gate.nvidia.symbols import kernel_name

O = RuleOutcome
STATUS_OUTCOME = {StageStatus.PASSED: O.PASS, StageStatus.FAILED: O.FAIL,        # a stage's row
                  StageStatus.NOT_RUN: O.NOT_RUN, StageStatus.ERROR: O.ERROR}


def bound_sentence(label: str, value: float, limit: float, unit: str, *, minimum: bool) -> tuple[bool, str]:
    """Whether `value` keeps to `limit`, and one sentence that says so, a minimum read as a floor:
    "tensor pipe 34 % is below the floor of 35 %", "96 registers is within the limit of 128
    registers". Every rule row with a threshold words it this way (the sample data too)."""
    ok = value >= limit if minimum else value <= limit
    shown = " ".join(part for part in (label, format_value(value, unit, 3)) if part)
    bound = format_value(limit, unit, 3)
    if minimum:
        return ok, f"{shown} {'meets' if ok else 'is below'} the floor of {bound}"
    return ok, f"{shown} is {'within' if ok else 'over'} the limit of {bound}"


def correctness_rows(res: CorrectnessResult | None) -> list[RuleRow]:
    """One row per shape (worst case of its seeds and dtypes); a stage row when there are no cases."""
    if res is None:
        return [RuleRow(Rule.CORRECTNESS, O.NOT_RUN, "the stage did not report")]
    stage_level = res.status in (StageStatus.NOT_RUN, StageStatus.ERROR) or not res.cases or (
        res.status is StageStatus.FAILED and all(c.passed for c in res.cases))   # e.g. a crash mid-run
    if stage_level:
        outcome = STATUS_OUTCOME[res.status]
        if outcome is O.PASS:
            outcome, why = O.NOT_RUN, "passed without a single case"
        else:
            why = res.reason or res.status.value
        return [RuleRow(Rule.CORRECTNESS, outcome, why)]
    rows = []
    for shape in dict.fromkeys(c.shape for c in res.cases):
        cases = [c for c in res.cases if c.shape == shape]
        failed = [c for c in cases if not c.passed]
        worst = max(failed or cases, key=_case_badness)
        rows.append(RuleRow(Rule.CORRECTNESS, O.FAIL if failed else O.PASS, _case_reason(worst, len(cases)),
                            shape=shape, value=_finite(worst.max_abs_err), threshold=worst.tolerance,
                            baseline=worst.torch_max_abs_err, unit="abs err"))
    return rows


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _case_badness(case: CorrectnessCase) -> float:
    err = case.max_abs_err
    if err is None or not math.isfinite(err):
        return math.inf
    return err / case.tolerance if case.tolerance else err


def _case_reason(case: CorrectnessCase, n: int) -> str:
    where = f"{case.dtype} seed {case.seed}"
    if not case.passed and case.reason:
        return f"{where}: {case.reason}"
    err = "n/a" if case.max_abs_err is None else f"{case.max_abs_err:.3g}"
    tol = "n/a" if case.tolerance is None else f"{case.tolerance:.3g}"
    if case.passed:
        return f"{n} case(s) pass; worst max |err| {err} <= tol {tol} ({where})"
    return f"{where}: max |err| {err} > tol {tol}"


NEW_KERNEL = "new kernel: no baseline revision declares it, nothing to regress against"
UNSTEADY = "GPU not steady while timing: "


def latency_rows(bench: BenchResult, max_regression_pct: float, alpha: float,
                 new_kernel: bool = False) -> list[RuleRow]:
    """Per shape: fail only when the whole 95 % interval is above the threshold and p < alpha. On a GPU
    that was not steady while timing (`GpuWatch.problems`: another process, heat, a hardware slowdown)
    a row that judged is inconclusive, never a pass or a fail on such data, unless GPU Boost merely
    moved the clocks (`boost_spread_pct`), on both interleaved sides: then the row says so and stands."""
    rows = [_latency_row(st, max_regression_pct, alpha, new_kernel) for st in bench.shapes]
    watch = bench.gpu_watch
    if watch is not None and watch.problems and watch.boost_spread_pct:
        note = f"; clocks moved by up to {watch.boost_spread_pct:g} % (GPU Boost), on both interleaved sides"
        rows = [replace(r, reason=r.reason + note) if _compared(r) else r for r in rows]
    else:
        rows = unsteady(rows, bench, _compared)
    return rows or [RuleRow(Rule.MAX_LATENCY_REGRESSION_PCT, O.NOT_RUN, "bench timed no shape")]


def _compared(row: RuleRow) -> bool:
    return row.outcome in (O.PASS, O.FAIL) and row.baseline is not None


def inconclusive(rows: list[RuleRow], why: str, judged: Callable[[RuleRow], bool]) -> list[RuleRow]:
    """`rows` with those `judged` picks made inconclusive, `why` told before their own reason."""
    return [replace(r, outcome=O.INCONCLUSIVE, reason=f"{why} ({r.reason})") if judged(r) else r for r in rows]


def unsteady(rows: list[RuleRow], bench: BenchResult, judged: Callable[[RuleRow], bool]) -> list[RuleRow]:
    """`inconclusive` for the rows `judged` picks when the GPU was not steady while timing (`GpuWatch.problems`)."""
    problems = bench.gpu_watch.problems if bench.gpu_watch is not None else []
    return inconclusive(rows, UNSTEADY + "; ".join(problems), judged) if problems else rows


def about(st: ShapeTiming) -> dict[str, str]:
    """A row timed per shape and dtype says which (`RuleRow.where`)."""
    return {"shape": st.shape, "dtype": st.dtype}


def _latency_row(st: ShapeTiming, pct: float, alpha: float, new_kernel: bool) -> RuleRow:
    rule, limit = Rule.MAX_LATENCY_REGRESSION_PCT, 1.0 + pct / 100.0
    cand = st.candidate.median_us
    if st.baseline is None and new_kernel:
        return RuleRow(rule, O.PASS, NEW_KERNEL, **about(st), value=cand, threshold=pct, unit="us")
    if st.baseline is None or st.ratio is None:
        return RuleRow(rule, O.NOT_RUN, "no baseline timing to compare with", **about(st),
                       value=cand, threshold=pct, unit="us")
    base = st.baseline.median_us
    common = dict(**about(st), value=cand, baseline=base, delta=cand - base,
                  threshold=round(base * limit, 3), unit="us")
    change = f"{(st.ratio - 1) * 100:+.1f} %"
    lo, hi, p = st.ratio_ci_low, st.ratio_ci_high, st.p_value
    if lo is None or hi is None or p is None:
        return RuleRow(rule, O.NOT_RUN, f"{change} but no interval or p-value to test it", **common)
    interval = f"CI {(lo - 1) * 100:+.1f}..{(hi - 1) * 100:+.1f} %, p={p:.2g}"
    if lo > limit and p < alpha:
        return RuleRow(rule, O.FAIL, f"{change} slower ({interval}) > {pct:g} %", **common)
    if hi <= limit:
        return RuleRow(rule, O.PASS, f"{change} ({interval}) within {pct:g} %", **common)
    why = "not significant" if lo > limit else "interval straddles the threshold"
    return RuleRow(rule, O.INCONCLUSIVE, f"{change} ({interval}): {why} at {pct:g} %", **common)


# Rules of the measurement's own integrity (Rule.ALL_STREAMS_TIME, Rule.PHYSICAL_FLOOR).
# Per call, the time until every stream has finished may exceed what the caller's stream explains by
# this factor plus this slack before the difference counts as hidden work. What the caller's stream
# explains is its own time over the same eager calls (events around the loop): a joined side stream
# adds only its fork/join gaps there, and the final synchronisation ~20 µs over ~2 ms of calls.
# A timing without that figure (one built by hand, as in the sample data) falls back to the cold
# event time or the host's enqueue time, whichever is larger.
ALL_STREAMS_RATIO, ALL_STREAMS_SLACK_US = 1.25, 2.0


def integrity_rows(bench: BenchResult) -> list[RuleRow]:
    """Per shape: the time per call on every stream against what the caller's stream explains (work hidden
    on a private stream), and the event time against the physical floor, where the shape has one (none for a
    custom workload declaring neither FLOPs nor bytes, or an unknown GPU). A hidden share under the enqueue time of a
    launch-bound call escapes the first; hiding all of it still meets the floor. On an unsteady GPU a
    failure of the first is inconclusive (sharing or moving clocks lengthen its eager window, not the
    events); the floor stands: no sharing makes a kernel faster than hardware allows."""
    rows = []
    for st in bench.shapes:
        events = st.candidate.median_us
        if st.all_streams_us is None:
            rows.append(RuleRow(Rule.ALL_STREAMS_TIME, O.NOT_RUN, "no all-streams measure", **about(st),
                                value=events, unit="us"))
        else:
            if st.caller_stream_us is not None:
                explained = max(st.caller_stream_us, st.enqueue_us or 0.0)
                caller = f"{st.caller_stream_us:.3g} us on the caller's stream over the same calls"
            else:
                explained = max(events, st.enqueue_us or 0.0)
                caller = f"{events:.3g} us on the caller's stream"
            limit = round(explained * ALL_STREAMS_RATIO + ALL_STREAMS_SLACK_US, 3)
            figures = f"{st.all_streams_us:.3g} us per call until every stream finished vs {caller}"
            hidden = st.all_streams_us > limit
            rows.append(RuleRow(Rule.ALL_STREAMS_TIME, O.FAIL if hidden else O.PASS,
                                f"work outside the caller's stream: {figures} (limit {limit:g} us)" if hidden
                                else figures, **about(st), value=round(st.all_streams_us, 3),
                                threshold=limit, baseline=round(explained, 3), unit="us"))
        if st.floor_us is not None:
            below = events < st.floor_us
            figures = f"{events:.3g} us vs floor {st.floor_us:.3g} us ({st.floor_basis})"
            rows.append(RuleRow(Rule.PHYSICAL_FLOOR, O.FAIL if below else O.PASS,
                                f"faster than the hardware allows: {figures}" if below else figures,
                                **about(st), value=events, threshold=round(st.floor_us, 4),
                                unit="us"))
    return unsteady(rows, bench, lambda r: r.rule == Rule.ALL_STREAMS_TIME and r.outcome is O.FAIL)


def ncu_absolute_rows(cand: ProfileResult, gates: Gates,
                      specs: tuple[RuleSpec, ...] = of_kind(Kind.NCU_ABSOLUTE)) -> list[RuleRow]:
    """The `ncu absolute` rules the manifest sets, per shape, against their bound: floors on
    `absolute_shapes` (a floor may be out of reach on a small shape), ceilings on every profiled shape.
    Each reads its row's metric as `shape_figure` aggregates it over launches."""
    shapes = by_shape(cand.kernels)
    rows: list[RuleRow] = []
    for spec in specs:
        bound = threshold_of(spec, gates)
        if bound is None or spec.metric is None:
            continue
        targets = (gates.absolute_shapes or list(shapes)) if spec.bound is Bound.FLOOR else list(shapes)
        rows += [_compare(spec, shape, shape_figure(shapes.get(shape, []), spec.metric), bound) for shape in targets]
    return rows


def ncu_relative_rows(cand: ProfileResult, base: ProfileResult | None, gates: Gates, new_kernel: bool = False,
                      specs: tuple[RuleSpec, ...] = of_kind(Kind.NCU_RELATIVE)) -> list[RuleRow]:
    """The `ncu relative` rules the manifest sets, per profiled shape, against the baseline's profile."""
    shapes = by_shape(cand.kernels)
    base_shapes = by_shape(base.kernels) if base and base.status is StageStatus.PASSED else {}
    rows: list[RuleRow] = []
    for spec in specs:
        allowed = threshold_of(spec, gates)
        if allowed is None or spec.metric is None:
            continue
        is_drop = spec.bound is Bound.FLOOR
        for shape, kernels in shapes.items():
            value = shape_figure(kernels, spec.metric)
            before = shape_figure(base_shapes.get(shape, []), spec.metric)
            if before is None:
                outcome, why = (O.PASS, NEW_KERNEL) if new_kernel else (O.NOT_RUN, "no baseline profile for this shape")
                rows.append(RuleRow(spec.rule, outcome, why, shape=shape, value=value, unit=spec.unit))
                continue
            row = _compare(spec, shape, value, round(before - allowed if is_drop else before + allowed, 3))
            row.baseline, row.delta = before, None if value is None else value - before
            if value is not None:
                row.reason += f" (baseline {before:.3g} {spec.unit} {'-' if is_drop else '+'} {allowed:g} points)"
            rows.append(row)
    return rows


def smem_launch_rows(cand: ProfileResult, limit: int) -> list[RuleRow]:
    """`max_smem_bytes` on what each profiled launch asked for: static + dynamic shared memory per
    block, worst launch per shape. ptxas (the static rows) sees only the `__shared__` arrays; a
    kernel whose tiles are all `extern __shared__` reads 0 B there (NCU-FACTS.md: launch__*).
    Launches without these figures add no row: the static rows still gate what they can see."""
    rows: list[RuleRow] = []
    for shape, kernels in by_shape(cand.kernels).items():
        sized = [k for k in kernels if k.smem_static_bytes is not None and k.smem_dynamic_bytes is not None]
        if not sized:   # a report from before these launch attributes: the static rows still apply
            continue
        worst = max(sized, key=lambda k: (k.smem_static_bytes or 0) + (k.smem_dynamic_bytes or 0))
        static, dynamic = worst.smem_static_bytes or 0, worst.smem_dynamic_bytes or 0
        ok, sentence = bound_sentence("shared memory per block", static + dynamic, limit, "bytes", minimum=False)
        rows.append(RuleRow(Rule.MAX_SMEM_BYTES, O.PASS if ok else O.FAIL,
                            f"{kernel_name(worst.kernel)}: {sentence} ({static} B static + {dynamic} B dynamic)",
                            shape=shape, value=static + dynamic, threshold=limit, unit="bytes"))
    return rows


def _compare(spec: RuleSpec, shape: str, value: float | None, bound: float) -> RuleRow:
    if value is None:
        return RuleRow(spec.rule, O.NOT_RUN, "metric not collected for this shape", shape=shape,
                       threshold=bound, unit=spec.unit)
    ok, sentence = bound_sentence(spec.words, round(value, 1), bound, spec.unit, minimum=spec.bound is Bound.FLOOR)
    return RuleRow(spec.rule, O.PASS if ok else O.FAIL, sentence, shape=shape,
                   value=round(value, 3), threshold=bound, unit=spec.unit)
