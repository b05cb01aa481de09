"""The revision page's rule table (pure): the rows that decide or changed first, the rest one line per rule.

A job's table can hold dozens of rows (one per template instance and arch), most of them a pass equal to
the baseline; shown in full they pushed the deciding row below the fold. `gate.verdict.static_rows`
already folds the zero-increase static rows in the stored table; this folds, for display only, every
other passing row that did not move, so the page leads with what decided the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.domain.verdict import RuleOutcome, RuleRow
from gate.domain.wording import plural


@dataclass(frozen=True)
class Folded:
    rule: str
    count: int                  # passing rows of this rule that did not change
    text: str                   # "31 instances unchanged, all pass"


@dataclass(frozen=True)
class RuleTable:
    shown: list[RuleRow]        # deciding rows, then other failing rows, then rows that changed
    folded: list[Folded]        # one line per rule for its passing rows that did not change


# Passing rows of one rule that moved, shown one by one up to this many; more fold into one line with
# their range (the demo's extra-work commit moved the registers of 32 template instances by -2..+5,
# all passing: shown in full they made its revision page 8,400 px tall on the device).
MAX_CHANGED_SHOWN = 3
# A passing row without a baseline value: its rule is a limit on the candidate alone (the baseline's
# figures are elsewhere on the page, so "no baseline figure" read as a missing measurement).
ABSOLUTE = "a limit on this revision alone, not compared with the baseline"


def rule_table(rows: list[RuleRow]) -> RuleTable:
    """Split `rows` into those a reader must see and one summary line per rule of the rest."""
    deciding = [r for r in rows if r.decisive]
    failing = [r for r in rows if not r.decisive and r.outcome is not RuleOutcome.PASS]
    moved: dict[str, list[RuleRow]] = {}
    same: dict[str, list[RuleRow]] = {}
    for row in rows:
        if not row.decisive and row.outcome is RuleOutcome.PASS:
            (same if _unchanged(row) else moved).setdefault(row.rule, []).append(row)
    changed = [r for group in moved.values() if len(group) <= MAX_CHANGED_SHOWN for r in group]
    folded = [_fold_moved(rule, group) for rule, group in moved.items() if len(group) > MAX_CHANGED_SHOWN]
    return RuleTable(deciding + failing + changed, folded + [_fold(rule, group) for rule, group in same.items()])


def _fold_moved(rule: str, group: list[RuleRow]) -> Folded:
    """"32 instances changed, all pass: registers -2..+5" (the range of their deltas, where numeric)."""
    deltas = [r.delta for r in group if isinstance(r.delta, (int, float))]
    unit = next((r.unit for r in group if r.unit), "")
    span = f": {unit} {min(deltas):+g}..{max(deltas):+g}".replace(":  ", ": ") if deltas else ""
    return Folded(rule, len(group), f"{plural(len(group), 'instance')} changed, all pass{span}")


def _unchanged(row: RuleRow) -> bool:
    """A row whose figure equals the baseline's, or one without a baseline that passes."""
    if isinstance(row.delta, (int, float)):
        return row.delta == 0
    return row.baseline is None or row.baseline == row.value


def _count(row: RuleRow) -> int:
    """Rows one stored row stands for: `static_rows` writes "31 instances unchanged (...)"."""
    head = row.reason.split(" ", 1)[0]
    return int(head) if head.isdigit() and "instances unchanged" in row.reason else 1


def _fold(rule: str, group: list[RuleRow]) -> Folded:
    count = sum(_count(r) for r in group)
    with_base = any(r.baseline is not None or isinstance(r.delta, (int, float)) for r in group)
    what = "unchanged, all pass" if with_base else f"pass ({ABSOLUTE})"
    if count == 1:
        return Folded(rule, 1, f"passes, {'unchanged' if with_base else ABSOLUTE}: {group[0].reason}")
    return Folded(rule, count, f"{plural(count, 'instance')} {what}")
