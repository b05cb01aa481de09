"""`gate run` names the source lines that got slower under the kernel's rule table."""

from gate.commands.run_report import render
from gate.domain import JobResult, ProfileResult, SideResults, StageStatus, Verdict, VerdictReport
from gate.domain.job import GateOutcome
from tests.verdict.test_lines import baseline, conflicting_candidate


def outcome(base_profile: ProfileResult | None) -> GateOutcome:
    cand = SideResults("c" * 40, profile=ProfileResult(StageStatus.PASSED, source=[conflicting_candidate()]))
    base = SideResults("b" * 40, profile=base_profile)
    return GateOutcome(JobResult("flashcore_wmma", cand, base),
                       VerdictReport(Verdict.REJECT, "reject: max_bank_conflict_pct", []))


def test_the_report_names_the_line_that_gained_conflicts():
    text = render([outcome(ProfileResult(StageStatus.PASSED, source=[baseline()]))],
                  sha="c" * 40, base_sha="b" * 40)
    assert "where it got slower: flashcore_mma_fwd_kernel" in text
    assert "kernels/flashcore/wmma.cu:141 (line 140 in the baseline)" in text
    assert "| ldmatrix_x4(kf, &ks[(lane % 16) * kRow + k0]);" in text


def test_without_a_baseline_profile_the_report_shows_where_the_time_goes():
    text = render([outcome(None)], sha="c" * 40, base_sha="b" * 40)
    assert "where the time goes: flashcore_mma_fwd_kernel" in text and "no baseline profile" in text


def test_a_failed_baseline_profile_is_not_compared_against():
    text = render([outcome(ProfileResult(StageStatus.FAILED, "ncu failed", source=[baseline()]))],
                  sha="c" * 40, base_sha="b" * 40)
    assert "where it got slower" not in text and "no baseline profile" in text
