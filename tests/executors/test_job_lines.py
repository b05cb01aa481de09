"""gate_job hands the source-line diff to the notifications: the verdict report it returns carries
the lines that got slower, computed from the child's profiles of both sides."""

from __future__ import annotations

from gate.domain import JobResult, ProfileResult, SideResults, StageStatus
from gate.domain.job import JobOrder, RunOptions
from gate.executors import job
from gate.sources.mirror import Mirror
from tests.samples.build import make_repo
from tests.verdict.test_lines import baseline, conflicting_candidate


def test_the_report_carries_the_lines_that_got_slower(tmp_path, monkeypatch):
    repo, shas = make_repo(tmp_path)

    def child(request, **_):
        return JobResult("wmma_gemm", SideResults(
            shas["base"], profile=ProfileResult(StageStatus.PASSED, source=[conflicting_candidate()])),
            SideResults(shas["base"], profile=ProfileResult(StageStatus.PASSED, source=[baseline()])))

    monkeypatch.setattr(job, "run_child", child)
    outcome = job.gate_job(JobOrder(repo=str(repo), sha=shas["base"], base_sha=shas["base"], kernel="wmma_gemm"),
                           job.JobContext(data_dir=tmp_path / "data", options=RunOptions(),
                                          mirror=Mirror(tmp_path / "mirrors")))
    (diff,) = outcome.report.lines
    assert diff.compared and diff.changes[0].line == 141
