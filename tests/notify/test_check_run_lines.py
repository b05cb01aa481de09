"""The Check Run summary names the top three source lines that got slower, after the rule table."""

import dataclasses

from gate.notify import messages
from gate.verdict.lines import diff_profiles
from tests.golden import assert_golden
from tests.notify.sample_reports import REPORTS
from tests.verdict.test_lines import baseline, conflicting_candidate, extra_work_candidate

TARGET_URL = "https://gate.example.com/revisions/42"


def test_the_summary_carries_the_hot_lines_before_the_dashboard_link():
    lines = diff_profiles([conflicting_candidate(), extra_work_candidate()], [baseline(), baseline()])
    report = dataclasses.replace(REPORTS["reject_bank_conflicts"], lines=lines)
    text = messages.check_summary("flashcore_wmma", report, TARGET_URL)
    assert text.index("| Rule |") < text.index("Where it got slower") < text.index("[Full results")
    assert_golden("check_summary_reject_lines.md", text)


def test_no_lines_leave_the_summary_as_it_was():
    report = REPORTS["reject_latency"]
    assert "Where it got slower" not in messages.check_summary("flashcore_wmma", report, TARGET_URL)
