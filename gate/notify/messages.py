"""The wording of every outbound message, kept apart from the clients that send it. Pure.

Only `accept` may ever read as passing (DESIGN.md): `neutral` and `skipped` conclusions are never used,
since branch protection counts them as passing. The mapping is `_GITHUB` (and docs/github.md).
"""

from __future__ import annotations

from gate.domain.line_wording import as_markdown
from gate.domain.rule_catalog import BY_RULE, Bound
from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport
from gate.domain.wording import cut

DESCRIPTION_MAX_CHARS = 140       # GitHub's limit for a commit status description
SUMMARY_MAX_CHARS = 65_535        # GitHub's limit for a Check Run output.summary
TITLE_MAX_CHARS = 255

# verdict -> (commit status state, Check Run conclusion), and why where it is not plain.
_GITHUB = {
    Verdict.ACCEPT: ("success", "success"),
    Verdict.REJECT: ("failure", "failure"),              # the kernel broke a rule
    # The kernel could not be cleared; a maintainer may override the required check.
    Verdict.INCONCLUSIVE: ("failure", "failure"),
    # The gate could not measure here (e.g. no GPU): not the author's fault, still blocks.
    Verdict.INCOMPLETE: ("error", "action_required"),
    Verdict.ERROR: ("error", "failure"),                 # the gate itself failed
}

_OUTCOME_MARK = {
    RuleOutcome.PASS: "pass",
    RuleOutcome.FAIL: "**FAIL**",
    RuleOutcome.NOT_RUN: "not run",
    RuleOutcome.INCONCLUSIVE: "inconclusive",
}

# A cancelled job has no verdict. GitHub's commit statuses have no "cancelled"; `error` keeps a
# required check blocking, and the Check Run says `cancelled`, which branch protection does not pass.
CANCELLED_STATE = "error"
CANCELLED_CONCLUSION = "cancelled"
CANCELLED_DESCRIPTION = "cancelled on request: no verdict (submit again to gate this commit)"


def commit_state(verdict: Verdict) -> str:
    return _GITHUB[verdict][0]


def check_conclusion(verdict: Verdict) -> str:
    return _GITHUB[verdict][1]


def context(kernel: str) -> str:
    """The status context and Check Run name that branch protection requires."""
    return f"gate/{kernel}"


def figure(row: RuleRow) -> str:
    """`max_bank_conflict_pct 12.5% > 5% @ b1_h8_s512_d64`: the rule, its value and threshold."""
    if row.value is None:
        text = row.rule
    else:
        op = _operator(row)
        text = f"{row.rule} {_fmt(row.value, row.unit)}"
        if row.threshold is not None and op:
            text += f" {op} {_fmt(row.threshold, row.unit)}"
    if row.where:
        text += f" @ {row.where}"
    return text


def describe(report: VerdictReport) -> str:
    """Commit status description: verdict, decisive rule with its figure, then the reason."""
    row = report.decisive_row          # as `decide` marked it, never chosen again here
    passed = sum(r.outcome is RuleOutcome.PASS for r in report.rules)
    if report.verdict is Verdict.ACCEPT:
        head = f"{report.verdict.value}: {passed}/{len(report.rules)} rules pass"
        text = f"{head}; {figure(row)}" if row is not None and row.value is not None else head
    elif row is not None:
        text = f"{report.verdict.value}: {figure(row)}"
        if row.reason:
            text += f" ({row.reason})"
    else:
        text = f"{report.verdict.value}: {report.reason}"
    return _clip(text, DESCRIPTION_MAX_CHARS)


def check_title(report: VerdictReport) -> str:
    return _clip(describe(report), TITLE_MAX_CHARS)


def check_summary(kernel: str, report: VerdictReport, target_url: str) -> str:
    """Markdown: the verdict and its reason, the whole rule table, a link to the dashboard."""
    lines = [
        f"### {context(kernel)}: {report.verdict.value}",
        "",
        _cell(report.reason) or "(no reason given)",
        "",
    ]
    if report.rules:
        lines += [
            "| Rule | Shape | Value | Threshold | Baseline | Delta | Result | Reason |",
            "|---|---|---:|---:|---:|---:|---|---|",
        ]
        lines += [_table_row(r) for r in report.rules]
    else:
        lines.append("No rule was evaluated.")
    hot = as_markdown(report.lines)       # the top three source lines that gained stalls, conflicts, work
    if hot:
        lines += ["", hot.rstrip()]
    footer = ["", f"[Full results on the dashboard]({target_url})"]
    text = "\n".join(lines + footer)
    if len(text) <= SUMMARY_MAX_CHARS:
        return text
    note = f"\n\n(table cut to fit GitHub's {SUMMARY_MAX_CHARS} characters)"
    head = "\n".join(lines)[: SUMMARY_MAX_CHARS - len(note) - len("\n".join(footer)) - 1]
    return head.rsplit("\n", 1)[0] + note + "\n".join(footer)


def _table_row(row: RuleRow) -> str:
    delta = "" if row.delta is None else f"{row.delta:+.4g}"
    cells = [
        f"`{row.rule}`",
        row.where,
        _fmt(row.value, row.unit),
        _fmt(row.threshold, row.unit),
        _fmt(row.baseline, row.unit),
        delta,
        _OUTCOME_MARK[row.outcome],
        row.reason,
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _operator(row: RuleRow) -> str:
    """How the value stood against the threshold: the rule's bound in the catalogue (a stage's row,
    which has none, reads `vs`)."""
    failed = row.outcome is RuleOutcome.FAIL
    spec = BY_RULE.get(row.rule)
    if spec is not None and spec.bound is Bound.CEILING:
        return ">" if failed else "<="
    if spec is not None and spec.bound is Bound.FLOOR:
        return "<" if failed else ">="
    return "vs"


def _fmt(value: float | str | None, unit: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        value = f"{value:.4g}"
    if not unit:
        return str(value)
    return f"{value}{unit}" if unit in ("%", "x") else f"{value} {unit}"


def _cell(text: str) -> str:
    """One Markdown table cell: no pipes or line breaks from a free-text reason."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _clip(text: str, limit: int) -> str:
    return cut(" ".join(text.split()), limit)
