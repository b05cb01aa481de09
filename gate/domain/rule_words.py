"""A rule row's threshold as a person reads it (pure): an increase rule's threshold is the increase it
allows ("+8 registers"), never a bare "8 registers" beside a value of "40 registers"."""

from __future__ import annotations

from gate.domain.rule_catalog import CATALOG, Kind
from gate.domain.verdict import RuleRow
from gate.domain.wording import format_value

# Rules whose threshold bounds a change against the baseline, not the figure itself (not the shown-only static_delta).
INCREASE_RULES = frozenset(s.rule for s in CATALOG if s.kind is Kind.STATIC_INCREASE and s.keyed)


def threshold_words(row: RuleRow) -> str:
    """`row.threshold` in its unit; for an increase rule, signed as the increase it allows."""
    return as_allowed(row, format_value(row.threshold, row.unit))


def as_allowed(row: RuleRow, text: str) -> str:
    """`text` (the threshold, as the page or the CLI writes it) signed "+" for an increase rule."""
    if row.rule in INCREASE_RULES and isinstance(row.threshold, (int, float)) and row.threshold >= 0:
        return f"+{text}"
    return text
