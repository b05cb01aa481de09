"""An unchanged baseline is not profiled again on the device (issue 30, docs/reuse.md): the second of
two jobs, whose baseline is the first job's candidate, runs one ncu session (the candidate's) and
takes the first job's candidate profile as its baseline's, saying so; the parent's side keys agree
across the two jobs' checkouts on a real GPU environment. Under 2 minutes on an H100.

Both jobs go through `gate_job` as the service runs them; the history's lookup is a dict of the first
job's outcome (tests/executors/test_reuse.py covers the stored lookup without a GPU).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gate.domain import StageStatus
from gate.domain.job import JobOrder, RunOptions
from gate.domain.reuse import History, HistoryAnswers, Provenance, ReusedProfile, ReuseKeys

pytestmark = pytest.mark.gpu

SUBJECT = Path(__file__).resolve().parents[2] / "bench" / "quality_repo"
MANIFEST = (SUBJECT / "gate.toml.in").read_text().format(shapes="{n = 1048576, iters = 2000}", more_gates="")
GIT = ["git", "-c", "user.name=gate", "-c", "user.email=gate@example.com"]


def _commit(repo: Path, note: str) -> str:
    (repo / "NOTES.md").write_text(note)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", note], cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_the_second_job_takes_its_baselines_profile_from_the_first_jobs_candidate(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from gate.executors.job import JobContext, gate_job
    from gate.sources.mirror import Mirror

    repo = tmp_path / "repo"
    shutil.copytree(SUBJECT, repo)
    (repo / "gate.toml").write_text(MANIFEST)
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    first, second, third = (_commit(repo, f"note {i}\n") for i in range(3))
    data_dir = tmp_path / "data"
    options = RunOptions(bench_budget_s=2.0, max_reruns=0, build_cache_dir=str(data_dir / "build-cache"))
    mirror = Mirror(data_dir / "mirrors")

    def gate(sha: str, base: str, history: History | None = None):
        return gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=base, kernel="fma_chain"),
                        JobContext(data_dir=data_dir, options=options, mirror=mirror, history=history))

    earlier = gate(second, first)
    assert earlier.candidate_key and earlier.result.candidate.profile.status is StageStatus.PASSED
    assert earlier.result.baseline.profile.status is StageStatus.PASSED       # nothing to take: profiled
    asked: list[str] = []

    class Lookup:
        def answers(self, kernel: str, keys: ReuseKeys) -> HistoryAnswers:
            asked.append(keys.baseline)
            if keys.baseline != earlier.candidate_key:
                return HistoryAnswers()
            return HistoryAnswers(baseline_profile=ReusedProfile(earlier.result.candidate.profile,
                                                                 Provenance(7, second, "2026-11-26T00:00:00")))

    later = gate(third, second, Lookup())
    assert asked == [earlier.candidate_key]        # the baseline (second) checked out anew: the same key
    base, cand = later.result.baseline.profile, later.result.candidate.profile
    assert base.status is StageStatus.PASSED and base.kernels == earlier.result.candidate.profile.kernels
    line = f"baseline profile reused from {second[:12]} job 7, 2026-11-26 00:00 UTC"
    assert line in later.result.notes
    assert cand.status is StageStatus.PASSED and cand.report_path != base.report_path   # measured now
    reports = [path for kind, path in later.artifacts if kind == "ncu_report"]
    assert len(reports) == len([p for k, p in earlier.artifacts if k == "ncu_report"]) - 1   # one session fewer
    assert later.report.verdict.value != "incomplete", later.report.reason
