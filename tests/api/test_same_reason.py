"""Issue 9's contract: when two rules fail, every surface states the one rule `decide` chose.

Bank conflicts and latency both fail here; decide names the cause (bank conflicts) before the
symptom (latency). The CLI table, the revision page, the commit status text and the Check Run
summary must all name that same deciding rule, never pick again."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from service_fakes import FakeOutcome, job_result

from gate.commands.run_report import render
from gate.domain import Gates, KernelMetrics, ProfileResult, StageStatus
from gate.domain.job import JobOrder
from gate.domain.rule_catalog import Rule
from gate.notify import messages
from gate.verdict.decide import decide

GATES = Gates(max_latency_regression_pct=3, max_bank_conflict_pct=10)


def two_failures(kernel: str, sha: str, base: str | None):  # noqa: ANN201
    result = job_result(kernel, sha, base)
    timing = result.bench.shapes[0]
    timing.ratio, timing.ratio_ci_low, timing.ratio_ci_high, timing.p_value = 1.30, 1.28, 1.32, 1e-6
    timing.candidate.median_us = timing.baseline.median_us * 1.30
    timing.all_streams_us, timing.enqueue_us = timing.candidate.median_us, 1.0
    result.candidate.profile = ProfileResult(StageStatus.PASSED, kernels=[KernelMetrics(
        kernel="fwd_a", shape=timing.shape, duration_ns=3000.0, ld_bank_conflict_pct=87.5, st_bank_conflict_pct=0.0)])
    return result, decide(result, GATES)


@dataclass
class TwoFailures:
    """A gate_job whose report is decide()'s own, on a result where two rules fail."""

    reports: list[Any] = field(default_factory=list)

    def __call__(self, order: JobOrder, _context: Any):  # noqa: ANN204
        result, report = two_failures(order.kernel, order.sha, order.base_sha)
        self.reports.append(report)
        return FakeOutcome(result, report)


@pytest.fixture
def pipeline() -> TwoFailures:
    """Overrides conftest's fake pipeline: the app gates with this one."""
    return TwoFailures()


def test_cli_page_status_and_check_run_name_the_same_deciding_rule(make_client, repo_dir, pipeline):
    result, report = two_failures("attn", "b" * 40, "a" * 40)
    failing = {r.rule for r in report.rules if r.outcome == "fail"}
    assert {Rule.MAX_BANK_CONFLICT_PCT, Rule.MAX_LATENCY_REGRESSION_PCT} <= failing
    deciding = report.decisive_row.rule
    assert deciding == Rule.MAX_BANK_CONFLICT_PCT

    cli = render([FakeOutcome(result, report)], sha="b" * 40, base_sha="a" * 40)
    status = messages.describe(report)
    summary = messages.check_summary("attn", report, "http://gate/revisions/1")
    assert f"REJECT  reject: {deciding}" in cli
    assert status.startswith(f"reject: {deciding}")
    assert f"reject: {deciding}" in summary

    client = make_client()
    reply = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()
    for _ in range(200):
        if client.get(reply["status_url"]).json()["status"] == "done":
            break
        time.sleep(0.1)
    page = client.get(f"/revisions/{reply['id']}").text
    reason_line = re.search(r'<p class="reason-line">(.*?)</p>', page).group(1)
    assert reason_line.startswith(f"reject: {deciding}")
    marked = re.findall(r'<tr class="o-fail decisive".*?<code>(\w+)</code>', page)
    assert marked == [deciding]
    assert pipeline.reports and pipeline.reports[0].decisive_row.rule == deciding
    # Rows timed per dtype say which one, on every surface alike.
    latency = next(r for r in report.rules if r.rule == Rule.MAX_LATENCY_REGRESSION_PCT)
    assert latency.dtype and latency.where == f"{latency.shape} {latency.dtype}"
    assert f"<td>{latency.where}</td>" in page
    assert f"max_latency_regression_pct  {latency.where}  fail" in cli
    assert f"| {latency.where} |" in summary
