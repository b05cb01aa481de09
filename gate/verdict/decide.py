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
from gate.domain.names import Rule, Stage
from gate.domain.results import JobResult, StageStatus, StaticResult
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport
from gate.verdict.catalog import Kind, cause_rank, of_kind, profile_rules_set, threshold_of
from gate.verdict.rules import correctness_rows, integrity_rows, latency_rows, profile_rows, smem_launch_rows
from gate.verdict.static_rules import static_delta_rows, static_rows
from gate.verdict.static_rows import collapse_unchanged
from gate.verdict.static_scope import StaticScope, aligned, launched_names, scoped, static_scope, unpaired
from gate.verdict.timing_integrity import distrust_profile, timing_integrity_rows

O = RuleOutcome
SIGNIFICANCE = 0.05          # Mann-Whitney p-value below which a difference is significant
_STATUS_OUTCOME = {StageStatus.PASSED: O.PASS, StageStatus.FAILED: O.FAIL,
                   StageStatus.NOT_RUN: O.NOT_RUN, StageStatus.ERROR: O.ERROR}


def decide(result: JobResult, gates: Gates, kernels: list[str] | None = None) -> VerdictReport:
    """The verdict of one job with its rule table; reads nothing but its arguments. `kernels` is the
    manifest's list of judged kernels (`static_scope`): without it, the ones the profile saw launched."""
    cand, base = result.candidate, result.baseline
    launched = launched_names(cand.profile)
    scope = static_scope(cand.static, launched, kernels or []) if cand.static else None
    rows: list[RuleRow] = []
    rows += _stage_row(Stage.STATIC, cand.static, required=True, scope=scope)
    rows += static_rows(scoped(cand.static, scope), gates)
    base_static = aligned(scoped(base.static, scope), cand.static) if base else None
    one_sided = unpaired(cand.static, scope, base, launched, kernels or [])   # each side by its own launches
    rows += collapse_unchanged(static_delta_rows(scoped(cand.static, scope), base_static, gates, result.new_kernel,
                                                 unpaired=one_sided))
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
    profile_needed = profile_rules_set(gates)
    if cand.profile is not None and cand.profile.status is StageStatus.PASSED and profile_needed:
        base_profile = result.baseline.profile if result.baseline else None
        rows += profile_rows(cand.profile, base_profile, gates, result.new_kernel)
    else:
        rows += _stage_row(Stage.PROFILE, cand.profile, required=profile_needed)
    for spec in of_kind(Kind.LAUNCH_CONFIG):
        bound = threshold_of(spec, gates)
        if bound is not None and cand.profile is not None and cand.profile.status is StageStatus.PASSED:
            rows += smem_launch_rows(cand.profile, bound)
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


def _stage_row(stage: Stage, res: object | None, *, required: bool, scope: StaticScope | None = None) -> list[RuleRow]:
    """One row for a stage that did not pass (or for static/build, which pass or fail as a whole)."""
    if res is None:
        return [RuleRow(Rule(stage), O.NOT_RUN, "the stage did not report")] if required else []
    status: StageStatus = res.status                        # every *Result has status and reason
    if status is StageStatus.NOT_RUN and not required:
        return []
    if status is StageStatus.PASSED and stage not in (Stage.STATIC, Stage.BUILD):
        return []
    if stage is Stage.STATIC and status is StageStatus.PASSED:
        return [_static_checked(res, scope)]
    reason = res.reason or ("built and imported" if status is StageStatus.PASSED else status.value)
    value = round(res.duration_s, 2) if status is StageStatus.PASSED else None
    return [RuleRow(Rule(stage), _STATUS_OUTCOME[status], reason, value=value, unit="s" if value is not None else "")]


def _static_checked(static: StaticResult, scope: StaticScope | None) -> RuleRow:
    """The static stage's row says what it checked (functions compiled per arch, SASS read, which of
    them the rules judge), not how long it took."""
    archs = list(dict.fromkeys(f.arch for f in static.functions))
    names = len({f.function for f in static.functions})
    sass = "SASS read" if static.sass_available else "no SASS (cuobjdump/nvdisasm not found)"
    reason = (f"ptxas compiled {names} kernel function{'s' if names != 1 else ''} for {', '.join(archs)}; {sass}"
              if archs else "compiled; no kernel functions found")
    if archs and scope is not None and scope.not_judged:   # judging all of them needs no note
        judged, rest = len({f.function for f in scope.judged}), len({f.function for f in scope.not_judged})
        reason += f"; judged {judged}, {scope.basis}; {rest} not judged"
    return RuleRow(Rule.STATIC, O.PASS, reason, value=len(static.functions), unit="functions")


def _severity(row: RuleRow) -> float:
    """How far past its threshold a row is, to pick the worst of several failing rows of one rule."""
    if not isinstance(row.value, (int, float)) or not isinstance(row.threshold, (int, float)):
        return float("inf") if row.value is None else 0.0
    return abs(row.value - row.threshold) / (abs(row.threshold) or 1.0)


def verdict_of(rows: list[RuleRow]) -> tuple[Verdict, str]:
    """The verdict and its one-line reason; marks the row the reason names as `decisive` (for
    `accept`, the worst latency row, when there is one). Nothing downstream chooses again."""
    for outcome, verdict in ((O.ERROR, Verdict.ERROR), (O.FAIL, Verdict.REJECT),
                             (O.NOT_RUN, Verdict.INCOMPLETE), (O.INCONCLUSIVE, Verdict.INCONCLUSIVE)):
        hits = sorted((r for r in rows if r.outcome is outcome), key=lambda r: cause_rank(r.rule))
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
    """The reason as one line, whole: each surface clips it to its own limit (GitHub's 140
    characters live in `gate.notify.messages`), so the page and the CLI show all of it."""
    return " ".join(text.split()) + suffix

