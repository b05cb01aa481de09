import pytest

from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport
from gate.notify import messages
from tests.golden import assert_golden
from tests.notify.sample_reports import REPORTS

TARGET_URL = "https://gate.example.com/revisions/42"


def test_status_descriptions_match_golden():
    text = "".join(f"{name}: {messages.describe(report)}\n" for name, report in REPORTS.items())
    assert_golden("status_descriptions.txt", text)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_check_run_summary_matches_golden(name):
    assert_golden(f"check_summary_{name}.md", messages.check_summary("flashcore_wmma", REPORTS[name], TARGET_URL))


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_description_fits_github_limit(name):
    assert len(messages.describe(REPORTS[name])) <= messages.DESCRIPTION_MAX_CHARS


def test_description_names_the_decisive_rule_and_its_figure():
    text = messages.describe(REPORTS["reject_bank_conflicts"])
    assert text.startswith("reject: max_bank_conflict_pct 12.5% > 5% @ b4_h16_s4096_d64_causal")


def test_long_reason_is_clipped_to_140_characters_with_an_ellipsis():
    report = VerdictReport(Verdict.ERROR, "x" * 500)
    text = messages.describe(report)
    assert len(text) == 140 and text.endswith("…")


@pytest.mark.parametrize("verdict", [Verdict.INCOMPLETE, Verdict.INCONCLUSIVE, Verdict.ERROR, Verdict.REJECT])
def test_only_accept_maps_to_a_passing_state(verdict):
    assert messages.commit_state(verdict) != "success"
    # branch protection counts neutral and skipped check runs as passing
    assert messages.check_conclusion(verdict) not in {"success", "neutral", "skipped"}


def test_accept_maps_to_success():
    assert messages.commit_state(Verdict.ACCEPT) == "success"
    assert messages.check_conclusion(Verdict.ACCEPT) == "success"


def test_summary_escapes_pipes_in_reasons():
    summary = messages.check_summary("k", REPORTS["reject_latency"], TARGET_URL)
    row = next(line for line in summary.splitlines() if "max_latency_regression_pct" in line)
    assert "7.9% slower \\| median" in row
    assert row.count(" | ") == 7            # eight cells, none split by the reason's pipe


def test_summary_links_the_dashboard():
    assert f"]({TARGET_URL})" in messages.check_summary("k", REPORTS["accept"], TARGET_URL)


def test_huge_rule_table_is_cut_to_github_summary_limit():
    rows = [RuleRow(f"rule_{i}", RuleOutcome.PASS, "r" * 200, value=float(i)) for i in range(1000)]
    summary = messages.check_summary("k", VerdictReport(Verdict.ACCEPT, "ok", rows), TARGET_URL)
    assert len(summary) <= messages.SUMMARY_MAX_CHARS
    assert "table cut" in summary and summary.endswith(f"]({TARGET_URL})")
