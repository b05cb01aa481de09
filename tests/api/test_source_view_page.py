"""The revision page of a job whose profiles carry source counters: the deciding rule links to the
source view, which highlights the line that gained bank conflicts."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import pytest
from service_fakes import FakeOutcome, job_result

from gate.domain import Gates, KernelMetrics, ProfileResult, SideResults, StageStatus
from gate.domain.job import JobOrder
from gate.executors.job import JobContext
from gate.verdict.decide import decide
from tests.verdict.test_lines import baseline, conflicting_candidate

GATES = Gates(max_bank_conflict_pct=10)


@dataclass
class ConflictingLine:
    def __call__(self, order: JobOrder, _context: JobContext) -> FakeOutcome:
        result = job_result(order.kernel, order.sha, order.base_sha)
        shape = result.bench.shapes[0].shape
        result.candidate.profile = ProfileResult(StageStatus.PASSED, kernels=[KernelMetrics(
            kernel="flashcore_mma_fwd_kernel", shape=shape, ld_bank_conflict_pct=60.0)],
            source=[conflicting_candidate()])
        result.baseline = result.baseline or SideResults(order.base_sha or "a" * 40)
        result.baseline.profile = ProfileResult(StageStatus.PASSED, source=[baseline()])
        return FakeOutcome(result, decide(result, GATES))


@pytest.fixture
def pipeline() -> ConflictingLine:
    return ConflictingLine()


def test_the_deciding_rule_links_to_the_highlighted_line(make_client, repo_dir, pipeline):
    client = make_client()
    reply = client.post("/api/v1/revisions", json={"repo": repo_dir, "sha": "HEAD"}).json()
    for _ in range(200):
        if client.get(reply["status_url"]).json()["status"] == "done":
            break
        time.sleep(0.1)
    page = client.get(f"/revisions/{reply['id']}").text
    link = re.search(r'<tr class="o-fail decisive".*?<a class="to-lines" href="#(lines-\d+-0)">where</a>', page, re.S)
    assert link is not None, "the deciding rule has no link to the source view"
    assert f'id="{link.group(1)}"' in page
    hot = re.search(r'<tr class="hot"[^>]*><td><code>([^<]+)</code>', page)
    assert hot is not None and hot.group(1) == "kernels/flashcore/wmma.cu:141"
