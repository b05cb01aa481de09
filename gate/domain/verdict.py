"""Verdict types. The decision itself is `gate.pipeline.decide.decide` (a pure function)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Verdict(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    INCONCLUSIVE = "inconclusive"   # timing interval straddles the threshold after the rerun budget
    INCOMPLETE = "incomplete"       # a required stage could not run here (e.g. no GPU)
    ERROR = "error"                 # the gate itself failed

    @property
    def exit_code(self) -> int:
        """CLI exit codes of DESIGN.md: 0 accept, 1 reject, 2 error, 3 incomplete or inconclusive."""
        return {"accept": 0, "reject": 1, "error": 2}.get(self.value, 3)


class RuleOutcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_RUN = "not_run"             # the stage that feeds the rule did not run
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"                 # the stage that feeds the rule hit an infrastructure fault


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


@dataclass
class VerdictReport:
    verdict: Verdict
    reason: str                     # the decisive rule in one line
    rules: list[RuleRow] = field(default_factory=list)
