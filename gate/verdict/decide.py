"""The verdict: a pure function of one job's results and the manifest's gates.

Every rule yields rows of the rule table (`RuleRow`); the verdict follows from the rows in the
order of `SEVERITY_ORDER` (`gate.domain.verdict`). A rule that cannot be evaluated is NOT_RUN, so a
missing figure can never turn into `accept`.

Latency follows asv's rule: a change counts only if it is larger than the threshold *and*
significant — here the 95 % bootstrap interval of the candidate/baseline median ratio lies wholly
above 1 + threshold and the Mann-Whitney U test gives p < 0.05. An interval that straddles the
threshold is inconclusive (the bench reruns with more samples before this is reported).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gate.domain.manifest import Gates, profile_rules_set, threshold_of
from gate.domain.names import Stage
from gate.domain.results import BenchResult, JobResult, ProfileResult, StageStatus, StaticResult
from gate.domain.rule_catalog import BY_RULE, Kind, Rule, RuleSpec, of_kind
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport
from gate.verdict.rules import (STATUS_OUTCOME, correctness_rows, integrity_rows, latency_rows, ncu_absolute_rows,
                                ncu_relative_rows, smem_launch_rows)
from gate.verdict.static_rows import collapse_unchanged
from gate.verdict.static_rules import sass_rows, static_delta_rows, static_limit_rows
from gate.verdict.static_scope import StaticScope, Unpaired, aligned, launched_names, scoped, static_scope, unpaired
from gate.verdict.timing_integrity import distrust_profile, timing_integrity_rows

O = RuleOutcome
SIGNIFICANCE = 0.05          # Mann-Whitney p-value below which a difference is significant


def decide(result: JobResult, gates: Gates, kernels: list[str] | None = None) -> VerdictReport:
    """The verdict of one job with its rule table; reads nothing but its arguments. `kernels` is the
    manifest's list of judged kernels (`static_scope`): without it, the ones the profile saw launched."""
    cand, launched = result.candidate, launched_names(result.candidate.profile)
    scope = static_scope(cand.static, launched, kernels or []) if cand.static else None
    one_sided = unpaired(cand.static, scope, result.baseline, launched, kernels or [])   # each by its own launches
    job = _Job(result, gates, scope, one_sided, scoped(cand.static, scope), _passed(result.bench),
               _passed(cand.profile))
    rows = distrust_profile([row for kind in Kind for row in BUILDERS[kind](job, of_kind(kind))])
    return VerdictReport(*verdict_of(rows), rules=rows)


def _passed(stage: BenchResult | ProfileResult | None) -> BenchResult | ProfileResult | None:
    return stage if stage is not None and stage.status is StageStatus.PASSED else None


@dataclass(frozen=True)
class _Job:
    """One job as the builders read it, a builder per kind of rule. A builder also writes the row of the
    stage its rules read where that stage decides alone (static, build; bench and profile when unjudged)."""

    result: JobResult
    gates: Gates
    scope: StaticScope | None
    unpaired: list[Unpaired]     # judged functions of one revision only
    static: StaticResult | None  # the candidate's, scoped to the judged functions
    bench: BenchResult | None    # when it passed
    profile: ProfileResult | None  # the candidate's, when it passed

    def static_limits(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        stage = _stage_row(Stage.STATIC, self.result.candidate.static, required=True, scope=self.scope)
        return stage + static_limit_rows(self.static, self.gates, specs)

    def sass(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        return sass_rows(self.static, self.gates, specs)

    def static_increases(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        cand, base = self.result.candidate, self.result.baseline
        base_static = aligned(scoped(base.static, self.scope), cand.static) if base else None
        return collapse_unchanged(static_delta_rows(self.static, base_static, self.gates, self.result.new_kernel,
                                                    specs, unpaired=self.unpaired))

    def correctness(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        cand = self.result.candidate
        return _stage_row(Stage.BUILD, cand.build, required=True) + correctness_rows(cand.correctness)

    def latency(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        (spec,) = specs
        pct = threshold_of(spec, self.gates)
        if self.bench is None or pct is None:
            return _stage_row(Stage.BENCH, self.result.bench, required=pct is not None)
        return latency_rows(self.bench, pct, SIGNIFICANCE, self.result.new_kernel)

    def integrity(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        # the bench's own checks, then issue 25's: the timed work checked, the methods agree, the timer intact
        return (integrity_rows(self.bench) if self.bench is not None else []) + timing_integrity_rows(self.result)

    def ncu_absolute(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        if self.profile is None:
            return _stage_row(Stage.PROFILE, self.result.candidate.profile, required=profile_rules_set(self.gates))
        return ncu_absolute_rows(self.profile, self.gates, specs)

    def ncu_relative(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        base = self.result.baseline.profile if self.result.baseline else None
        return ncu_relative_rows(self.profile, base, self.gates, self.result.new_kernel, specs) if self.profile else []

    def launch_config(self, specs: tuple[RuleSpec, ...]) -> list[RuleRow]:
        bounds = [bound for spec in specs if (bound := threshold_of(spec, self.gates)) is not None]
        return [row for bound in bounds for row in smem_launch_rows(self.profile, bound)] if self.profile else []


# Every kind's builder; `decide` runs them in `Kind`'s order (a test checks that every kind has one).
BUILDERS: dict[Kind, Callable[[_Job, tuple[RuleSpec, ...]], list[RuleRow]]] = {
    Kind.STATIC_LIMIT: _Job.static_limits, Kind.SASS: _Job.sass, Kind.STATIC_INCREASE: _Job.static_increases,
    Kind.CORRECTNESS: _Job.correctness, Kind.LATENCY: _Job.latency, Kind.INTEGRITY: _Job.integrity,
    Kind.NCU_ABSOLUTE: _Job.ncu_absolute, Kind.NCU_RELATIVE: _Job.ncu_relative, Kind.LAUNCH_CONFIG: _Job.launch_config,
}


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
    return [RuleRow(Rule(stage), STATUS_OUTCOME[status], reason, value=value, unit="s" if value is not None else "")]


def _static_checked(static: StaticResult, scope: StaticScope | None) -> RuleRow:
    """The static stage's row: what it checked (functions, archs, SASS, which are judged), not how long it took."""
    archs = list(dict.fromkeys(f.arch for f in static.functions))
    names = len({f.function for f in static.functions})
    sass = "SASS read" if static.sass_available else "no SASS (cuobjdump/nvdisasm not found)"
    reason = (f"ptxas compiled {names} kernel function{'s' if names != 1 else ''} for {', '.join(archs)}; {sass}"
              if archs else "compiled; no kernel functions found")
    if archs and scope is not None and scope.not_judged:   # judging all of them needs no note
        judged, rest = len({f.function for f in scope.judged}), len({f.function for f in scope.not_judged})
        reason += f"; judged {judged}, {scope.basis}; {rest} not judged"
    return RuleRow(Rule.STATIC, O.PASS, reason, value=len(static.functions), unit="functions")


# Of several failing rules the reason names the cause before the symptom: a broken build or a wrong
# answer, then what the compiler and the profiler measured, then the latency they explain.
_FIRST_CAUSES = (Rule.STATIC, Rule.BUILD, Rule.TIMED_OUTPUTS)   # a wrong timed call is a wrong answer


def cause_rank(rule: str) -> int:
    spec = BY_RULE.get(rule)
    if rule in _FIRST_CAUSES or (spec is not None and spec.kind is Kind.CORRECTNESS):
        return 0
    return 2 if spec is not None and spec.kind is Kind.LATENCY else 1


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
            where = " ".join(filter(None, (decisive.rule, decisive.where)))
            return verdict, _one_line(f"{verdict.value}: {where}: {decisive.reason}", more)
    latency = [r for r in rows if r.rule == Rule.MAX_LATENCY_REGRESSION_PCT and _delta_pct(r) is not None]
    if latency:
        max(latency, key=_delta_pct).decisive = True
    return Verdict.ACCEPT, _one_line(f"accept: all {len(rows)} rules pass{_latency_note(latency)}", "")


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

