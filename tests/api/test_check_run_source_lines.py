"""Issue 29: the lines that got slower reach GitHub and the page through the real service.

A job's outcome with source counters on both sides goes through the webhook, the executor, the
notifier and the outbox to the GitHub stand-in over HTTP: the Check Run it receives names the line
under "Where it got slower", and the revision page, fetched over HTTP, highlights the same line.
The GPU test (tests/gpu/test_source_lines_gpu.py) sends the demo's measured outcomes the same way.
"""

from __future__ import annotations

import pytest

from gate.domain import Gates, KernelMetrics, ProfileResult, SideResults, StageStatus
from gate.domain.job import GateOutcome
from gate.domain.results import JobResult
from gate.domain.source_lines import KernelSourceProfile
from gate.nvidia.ncu_report import read_launches
from gate.nvidia.source_counters import source_profile
from gate.verdict.decide import decide
from gate.verdict.lines import job_diffs
from tests.api.github_app_server import make_pr_repo
from tests.api.served_outcome import hot_rows, named_in_check_run, served
from tests.service_fakes import job_result
from tests.verdict.test_lines import FILE, baseline, conflicting_candidate, extra_work_candidate

GATES = Gates(max_bank_conflict_pct=10)


def outcome_of(kernel: str, candidate: KernelSourceProfile, base: KernelSourceProfile,
               conflict_pct: float = 0.0) -> GateOutcome:
    """A job whose profiles carry `candidate` and `base`, decided and given its line diff as
    `gate_job` does."""
    result: JobResult = job_result(kernel)
    shape = result.bench.shapes[0].shape
    result.candidate.profile = ProfileResult(StageStatus.PASSED, kernels=[KernelMetrics(
        kernel=candidate.kernel, shape=shape, ld_bank_conflict_pct=conflict_pct)], source=[candidate])
    result.baseline = result.baseline or SideResults("a" * 40)
    result.baseline.profile = ProfileResult(StageStatus.PASSED, source=[base])
    report = decide(result, GATES)
    report.lines = job_diffs(result)
    return GateOutcome(result, report)


@pytest.mark.parametrize(("candidate", "conflict_pct", "line", "gain"), [
    (conflicting_candidate, 60.0, 141, "+90,000 bank-conflict wavefronts"),
    (extra_work_candidate, 0.0, 161, "+6,000 instructions"),
], ids=["bank-conflicts", "extra-work"])
def test_the_check_run_sent_and_the_page_name_the_line(database_url, tmp_path, candidate, conflict_pct, line, gain):
    outcome = outcome_of("flashcore_wmma", candidate(), baseline(), conflict_pct)
    out = served(outcome, make_pr_repo(tmp_path / "flashcore"), data_dir=tmp_path / "data",
                 database_url=database_url)
    summary = out.check_run["output"]["summary"]
    print(summary)
    (named,) = named_in_check_run(summary)
    assert (named.where, named.kernel) == (f"{FILE}:{line}", "flashcore_mma_fwd_kernel")
    assert gain in named.gains
    assert named.text == next(ln.text for ln in candidate().lines if ln.line == line)
    assert summary.startswith(f"### gate/flashcore_wmma: {outcome.report.verdict.value}")
    assert hot_rows(out.page) == [f"{FILE}:{line}"]


def test_the_h200_reports_conflicting_loads_reach_the_check_run_by_instruction(tmp_path, ncu_fixture):
    """Real SourceCounters (the H200 transpose, built without -lineinfo): the Check Run names the
    four conflicting LDS by offset; the page has no source view without line information."""
    _, unpadded, padded = read_launches(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    cand = source_profile("transpose_smem", "", "", unpadded.instructions, None)
    base = source_profile("transpose_smem", "", "", padded.instructions, None)
    out = served(outcome_of("transpose", cand, base, conflict_pct=60.0), make_pr_repo(tmp_path / "flashcore"),
                 data_dir=tmp_path / "data")
    summary = out.check_run["output"]["summary"]
    print(summary)
    named = named_in_check_run(summary)
    assert len(named) == 3                      # the summary's top three
    assert all(n.where.startswith("+0x") and " LDS R" in n.where for n in named), named
    assert all("+4,063,232 bank-conflict wavefronts" in n.gains for n in named)
    assert hot_rows(out.page) == []
