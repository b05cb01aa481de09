"""Verdict types. The decision itself is `gate.verdict.decide.decide` (a pure function)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from gate.domain.source_lines import LinesDiff


class Verdict(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    INCONCLUSIVE = "inconclusive"   # timing interval straddles the threshold after the rerun budget
    INCOMPLETE = "incomplete"       # a required stage could not run here (e.g. no GPU)
    ERROR = "error"                 # the gate itself failed

    @property
    def exit_code(self) -> int:
        """The CLI's exit codes (docs/design.md): 0 accept, 1 reject, 2 error, 3 incomplete or inconclusive."""
        return {"accept": 0, "reject": 1, "error": 2}.get(self.value, 3)

    @property
    def severity(self) -> int:
        """0 for the worst (`error`); the rank in `SEVERITY_ORDER`."""
        return SEVERITY_ORDER.index(self)


# Worst first. One kernel's verdict decides a revision's (the worst of its jobs) and the exit code of
# `gate run`/`gate submit` with several kernels; the same order decides a job's verdict from its rule
# rows (`gate.verdict.decide`: any error -> error, any fail -> reject, any not-run -> incomplete, ...).
SEVERITY_ORDER = (Verdict.ERROR, Verdict.REJECT, Verdict.INCOMPLETE, Verdict.INCONCLUSIVE, Verdict.ACCEPT)


def worst_verdict(verdicts: Iterable[Verdict | str]) -> Verdict | None:
    """The most severe of `verdicts` (strings are read as `Verdict`s); None when there are none."""
    ranked = [Verdict(v) for v in verdicts]
    return min(ranked, key=lambda v: v.severity, default=None)


class RuleOutcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_RUN = "not_run"             # the stage that feeds the rule did not run
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"                 # the stage that feeds the rule hit an infrastructure fault


# The verdict each outcome other than pass gives a job (`gate.verdict.decide.verdict_of` takes the
# worst): a row failed its revision when its outcome is the one the verdict came from. A reject's rows
# are its `fail` rows, not a `not_run` row beside them, so a chart is marked only by what decided.
VERDICT_OF_OUTCOME = {RuleOutcome.ERROR: Verdict.ERROR, RuleOutcome.FAIL: Verdict.REJECT,
                      RuleOutcome.NOT_RUN: Verdict.INCOMPLETE, RuleOutcome.INCONCLUSIVE: Verdict.INCONCLUSIVE}


@dataclass
class RuleRow:
    rule: str                       # e.g. "max_bank_conflict_pct"
    outcome: RuleOutcome
    reason: str                     # one line a person can act on
    shape: str = ""                 # Shape.label, "" for per-kernel rules
    value: float | str | None = None
    threshold: float | str | None = None
    baseline: float | str | None = None
    delta: float | None = None
    unit: str = ""
    decisive: bool = False          # this row decided the verdict (`VerdictReport.reason` names it)
    dtype: str = ""                 # for rules judged per shape and dtype (timing): "float16"

    @property
    def where(self) -> str:
        """The shape and dtype the row is about, as every table and message shows them:
        `b4_h8_s1024_d64 float16`; "" for per-kernel rules."""
        return " ".join(filter(None, (self.shape, self.dtype)))


@dataclass
class VerdictReport:
    """A verdict, the one line that says why, and the rule table. `decide` marks the deciding row(s)
    (`RuleRow.decisive`) once; the CLI, the pages, the commit status, the Check Run and the outbound
    webhooks all state that row, and never choose again."""

    verdict: Verdict
    reason: str                     # the decisive rule in one line
    rules: list[RuleRow] = field(default_factory=list)
    # Where it got slower, per launch (gate.verdict.lines.job_diffs): set by the job after `decide`
    # for the Check Run; not stored with the verdict (the pages recompute it from the profile rows).
    lines: list[LinesDiff] = field(default_factory=list)

    @property
    def decisive_rows(self) -> list[RuleRow]:
        return [r for r in self.rules if r.decisive]

    @property
    def decisive_row(self) -> RuleRow | None:
        """The first deciding row (the one `reason` names); None for a verdict without rows."""
        rows = self.decisive_rows
        return rows[0] if rows else None
