"""The verdict: a pure function of one job's results and the manifest's gates.

Every rule yields rows of the rule table (`RuleRow`); the verdict follows from the rows by
precedence: any ERROR -> error; any FAIL -> reject; any NOT_RUN -> incomplete; any INCONCLUSIVE ->
inconclusive; else accept. A rule that cannot be evaluated is NOT_RUN, so a missing figure can never
turn into `accept`.

Latency follows asv's rule: a change counts only if it is larger than the threshold *and*
significant — here the 95 % bootstrap interval of the candidate/baseline median ratio lies wholly
above 1 + threshold and the Mann-Whitney U test gives p < 0.05. An interval that straddles the
threshold is inconclusive (the bench reruns with more samples before this is reported).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from gate.domain.manifest import Gates
from gate.domain.names import NCU_RULES, Rule, Stage
from gate.domain.results import JobResult, StageStatus, StaticResult
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport
from gate.nvidia.symbols import kernel_name
from gate.verdict.rules import (
    bound_sentence,
    correctness_rows,
    STATIC_FIGURES,
    integrity_rows,
    latency_rows,
    profile_rows,
    smem_launch_rows,
    static_delta_rows,
)
from gate.verdict.timing_integrity import distrust_profile, timing_integrity_rows

O = RuleOutcome
SIGNIFICANCE = 0.05          # Mann-Whitney p-value below which a difference is significant
REASON_CHARS = 140           # GitHub commit-status descriptions are cut at 140 characters
_STATUS_OUTCOME = {StageStatus.PASSED: O.PASS, StageStatus.FAILED: O.FAIL,
                   StageStatus.NOT_RUN: O.NOT_RUN, StageStatus.ERROR: O.ERROR}


def decide(result: JobResult, gates: Gates) -> VerdictReport:
    """The verdict of one job with its rule table; reads nothing but its arguments."""
    cand = result.candidate
    rows: list[RuleRow] = []
    rows += _stage_row(Stage.STATIC, cand.static, required=True)
    rows += static_rows(cand.static, gates)
    rows += static_delta_rows(cand.static, result.baseline.static if result.baseline else None, gates,
                              result.new_kernel)
    rows += _stage_row(Stage.BUILD, cand.build, required=True)
    rows += correctness_rows(cand.correctness)
    bench_needed = gates.max_latency_regression_pct is not None
    if result.bench is not None and result.bench.status is StageStatus.PASSED and bench_needed:
        watch = result.bench.gpu_watch
        unsteady = watch is not None and bool(watch.problems)
        margin = watch.boost_spread_pct if unsteady and watch.boost_spread_pct else 0.0
        latency = latency_rows(result.bench, gates.max_latency_regression_pct, SIGNIFICANCE, result.new_kernel,
                               margin)
        rows += _untrusted(latency, watch.problems) if unsteady and not margin else latency
    else:
        rows += _stage_row(Stage.BENCH, result.bench, required=bench_needed)
    if result.bench is not None and result.bench.status is StageStatus.PASSED:
        watch = result.bench.gpu_watch
        integrity = integrity_rows(result.bench)
        rows += _untrusted_streams(integrity, watch.problems) if watch is not None and watch.problems else integrity
    rows += timing_integrity_rows(result)      # issue 25: timed work checked, methods agree, timer intact
    profile_needed = any(getattr(gates, rule.value) is not None for rule in NCU_RULES)
    if cand.profile is not None and cand.profile.status is StageStatus.PASSED and profile_needed:
        base_profile = result.baseline.profile if result.baseline else None
        rows += profile_rows(cand.profile, base_profile, gates, result.new_kernel)
    else:
        rows += _stage_row(Stage.PROFILE, cand.profile, required=profile_needed)
    if gates.max_smem_bytes is not None and cand.profile is not None and cand.profile.status is StageStatus.PASSED:
        rows += smem_launch_rows(cand.profile, gates.max_smem_bytes)
    rows = distrust_profile(rows)
    return VerdictReport(*verdict_of(rows), rules=rows)


def _untrusted(latency: list[RuleRow], problems: list[str]) -> list[RuleRow]:
    """Latency rows timed on a GPU that another process used or that slowed down for heat or a
    hardware reason: inconclusive with the reason, never a verdict (a pass or a fail) on such data.
    (Clocks that GPU Boost merely moved leave the verdict standing: `latency_rows` notes them.)"""
    why = "GPU not steady while timing: " + "; ".join(problems)
    return [replace(r, outcome=O.INCONCLUSIVE, reason=f"{why} ({r.reason})")
            if r.outcome in (O.PASS, O.FAIL) and r.baseline is not None else r for r in latency]


def _untrusted_streams(integrity: list[RuleRow], problems: list[str]) -> list[RuleRow]:
    """The all-streams check compares a short eager window of wall time with the median of the
    interleaved events: another process time-slicing the GPU, or clocks that moved, lengthen one and
    not the other, so on such a GPU its failure is inconclusive, not a reject. The physical floor
    stays: no sharing makes a kernel faster than the hardware allows."""
    why = "GPU not steady while timing: " + "; ".join(problems)
    return [replace(r, outcome=O.INCONCLUSIVE, reason=f"{why} ({r.reason})")
            if r.rule == Rule.ALL_STREAMS_TIME and r.outcome is O.FAIL else r for r in integrity]


def _stage_row(stage: Stage, res: object | None, *, required: bool) -> list[RuleRow]:
    """One row for a stage that did not pass (or for static/build, which pass or fail as a whole)."""
    if res is None:
        return [RuleRow(Rule(stage), O.NOT_RUN, "the stage did not report")] if required else []
    status: StageStatus = res.status                        # every *Result has status and reason
    if status is StageStatus.NOT_RUN and not required:
        return []
    if status is StageStatus.PASSED and stage not in (Stage.STATIC, Stage.BUILD):
        return []
    if stage is Stage.STATIC and status is StageStatus.PASSED:
        return [_static_checked(res)]
    reason = res.reason or ("built and imported" if status is StageStatus.PASSED else status.value)
    value = round(res.duration_s, 2) if status is StageStatus.PASSED else None
    return [RuleRow(Rule(stage), _STATUS_OUTCOME[status], reason, value=value, unit="s" if value is not None else "")]


def _static_checked(static: StaticResult) -> RuleRow:
    """The static stage's row says what it checked (functions compiled per arch, SASS read), not
    how long it took."""
    archs = list(dict.fromkeys(f.arch for f in static.functions))
    names = len({f.function for f in static.functions})
    sass = "SASS read" if static.sass_available else "no SASS (cuobjdump/nvdisasm not found)"
    reason = (f"ptxas compiled {names} kernel function{'s' if names != 1 else ''} for {', '.join(archs)}; {sass}"
              if archs else "compiled; no kernel functions found")
    return RuleRow(Rule.STATIC, O.PASS, reason, value=len(static.functions), unit="functions")


def static_rows(static: StaticResult | None, gates: Gates) -> list[RuleRow]:
    """max_registers, max_spill_bytes, max_smem_bytes (worst function per arch) and require_sass."""
    limits = [(fig.limit, getattr(gates, fig.limit.value), fig) for fig in STATIC_FIGURES]
    wanted = [name for name, limit, _ in limits if limit is not None] + (
        [Rule.REQUIRE_SASS] if gates.require_sass else [])
    if not wanted:
        return []
    if static is None or static.status is not StageStatus.PASSED or not static.functions:
        why = "no kernel functions compiled" if static and static.status is StageStatus.PASSED \
            else "static stage did not pass"
        return [RuleRow(name, O.NOT_RUN, why) for name in wanted]
    rows: list[RuleRow] = []
    archs = list(dict.fromkeys(f.arch for f in static.functions))
    for name, limit, fig in limits:
        if limit is None:
            continue
        unit = fig.unit
        for arch in archs:
            worst = max((f for f in static.functions if f.arch == arch), key=fig.of)
            value = fig.of(worst)
            ok, sentence = bound_sentence(fig.words, value, limit, unit, minimum=False)
            rows.append(RuleRow(name, O.PASS if ok else O.FAIL, shape="",
                                reason=f"{arch} {kernel_name(worst.function)}: {sentence}",
                                value=value, threshold=limit, unit=unit))
    if gates.require_sass:
        rows += _sass_rows(static, archs, gates.require_sass)
    return rows


def _sass_rows(static: StaticResult, archs: list[str], required: list[str]) -> list[RuleRow]:
    if not static.sass_available:
        return [RuleRow(Rule.REQUIRE_SASS, O.NOT_RUN, "no SASS: cuobjdump/nvdisasm not found",
                        threshold=",".join(required))]
    rows = []
    for arch in archs:
        counts = {op: sum(f.sass_opcodes.get(op, 0) for f in static.functions if f.arch == arch)
                  for op in required}
        missing = [op for op, n in counts.items() if n == 0]
        shown = ", ".join(f"{op} x{n}" for op, n in counts.items())
        reason = f"{arch}: missing {', '.join(missing)}" if missing else f"{arch}: {shown}"
        rows.append(RuleRow(Rule.REQUIRE_SASS, O.FAIL if missing else O.PASS, reason,
                            value=shown, threshold=",".join(required)))
    return rows


def _severity(row: RuleRow) -> float:
    """How far past its threshold a row is, to pick the worst of several failing rows of one rule."""
    if not isinstance(row.value, (int, float)) or not isinstance(row.threshold, (int, float)):
        return float("inf") if row.value is None else 0.0
    return abs(row.value - row.threshold) / (abs(row.threshold) or 1.0)


def _cause_first(row: RuleRow) -> int:
    """Of several failing rules the reason names the cause before the symptom: a broken build or a
    wrong answer, then what the compiler and the profiler measured, then the latency they explain."""
    if row.rule in (Rule.STATIC, Rule.BUILD, Rule.CORRECTNESS):
        return 0
    return 2 if row.rule == Rule.MAX_LATENCY_REGRESSION_PCT else 1


def verdict_of(rows: list[RuleRow]) -> tuple[Verdict, str]:
    """The verdict and its one-line reason; marks the row the reason names as `decisive` (for
    `accept`, the worst latency row, when there is one). Nothing downstream chooses again."""
    for outcome, verdict in ((O.ERROR, Verdict.ERROR), (O.FAIL, Verdict.REJECT),
                             (O.NOT_RUN, Verdict.INCOMPLETE), (O.INCONCLUSIVE, Verdict.INCONCLUSIVE)):
        hits = sorted((r for r in rows if r.outcome is outcome), key=_cause_first)
        if hits:
            same_rule = [r for r in hits if r.rule == hits[0].rule]
            decisive = max(same_rule, key=_severity) if outcome is O.FAIL else hits[0]
            decisive.decisive = True
            more = f" (+{len(hits) - 1} more)" if len(hits) > 1 else ""
            return verdict, _one_line(f"{verdict.value}: {_where(decisive)}: {decisive.reason}", more)
    latency = [r for r in rows if r.rule == Rule.MAX_LATENCY_REGRESSION_PCT and _delta_pct(r) is not None]
    if latency:
        max(latency, key=_delta_pct).decisive = True
    return Verdict.ACCEPT, _one_line(f"accept: all {len(rows)} rules pass{_latency_note(latency)}", "")


def _where(row: RuleRow) -> str:
    return " ".join(filter(None, (row.rule, row.where)))


def _delta_pct(row: RuleRow) -> float | None:
    """A latency row's change against the baseline, in percent (None without a baseline)."""
    if isinstance(row.value, float) and isinstance(row.baseline, float) and row.baseline > 0:
        return (row.value / row.baseline - 1) * 100
    return None


def _latency_note(latency: Iterable[RuleRow]) -> str:
    deltas = [d for d in map(_delta_pct, latency) if d is not None]
    return f"; latency {max(deltas):+.1f} % at worst" if deltas else ""


def _one_line(text: str, suffix: str) -> str:
    text = " ".join(text.split())
    room = REASON_CHARS - len(suffix)
    return (text if len(text) <= room else text[: room - 1] + "…") + suffix

