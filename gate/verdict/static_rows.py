"""Unchanged `max_*_increase` rows collapsed into one row per rule.

`static_delta_rows` gives one row per judged function, arch and figure: a monorepo job had 60
identical "+0, within the limit" rows that buried the few that changed. The collapse happens in the
rule table itself, not only on one page, because the table is what every surface shows (CLI, page,
Check Run) and what is stored; a passing row with a zero increase carries no fact beyond its count.
A row that changed (up or down) or failed is kept as it is. Pure.
"""

from __future__ import annotations

from gate.domain.rule_words import INCREASE_RULES
from gate.domain.verdict import RuleOutcome, RuleRow


def collapse_unchanged(rows: list[RuleRow]) -> list[RuleRow]:
    """`rows` with every passing zero-increase row of one increase rule replaced by one row,
    "31 instances unchanged", where that rule's first such row stood."""
    unchanged: dict[str, list[RuleRow]] = {}
    for row in rows:
        if _unchanged(row):
            unchanged.setdefault(row.rule, []).append(row)
    out: list[RuleRow] = []
    for row in rows:
        if not _unchanged(row):
            out.append(row)
        elif row is unchanged[row.rule][0]:
            same = unchanged[row.rule]
            out.append(RuleRow(row.rule, RuleOutcome.PASS, _summary(same), value=row.value if len(same) == 1 else None,
                               threshold=row.threshold, delta=0, unit=row.unit))
    return out


def _unchanged(row: RuleRow) -> bool:
    # Not static_delta (no increase rule): its row can read 0 registers while another figure changed.
    return row.rule in INCREASE_RULES and row.outcome is RuleOutcome.PASS and row.delta == 0


def _summary(same: list[RuleRow]) -> str:
    if len(same) == 1:
        return same[0].reason
    archs = sorted({r.reason.split(" ", 1)[0] for r in same})
    return f"{len(same)} instances unchanged ({', '.join(archs)}): equal to the baseline's"
