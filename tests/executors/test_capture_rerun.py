"""A child that died while the bench captured CUDA graphs: the job runs once more, every shape timed
with events (gate/executors/job.py, `died_capturing`), and says so; any other death is the kernel's."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gate.domain.job import JobOrder, RunOptions
from gate.domain.results import BenchResult, JobResult, SideResults, StageStatus
from gate.executors import job as job_module
from gate.executors.job import EVENTS_RERUN, JobContext, gate_job
from gate.sources.mirror import Mirror

GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
MANIFEST = ('[[kernel]]\nname = "tiny"\nsources = ["k.cu"]\nworkload = "gemm"\n'
            'shapes = [{m = 64, n = 64, k = 64}, {m = 128, n = 128, k = 128}]\ndtypes = ["float16", "float32"]\n')
CAPTURE_DEATH = ("child exited with code 1 during bench (joint, capturing CUDA graphs): CUDA_CHECK error: "
                 "operation not permitted when stream is capturing")


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "k.cu").write_text("__global__ void k() {}\n")
    (path / "gate.toml").write_text(MANIFEST)
    subprocess.run([*GIT, "add", "."], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "first"], cwd=path, check=True)
    return path


def _run(tmp_path: Path, monkeypatch, first_bench: BenchResult) -> tuple[list, object]:
    requests = []

    def fake_child(request, **_kwargs):
        requests.append(request)
        bench = first_bench if len(requests) == 1 else BenchResult(StageStatus.PASSED, "timed")
        return JobResult(kernel="tiny", candidate=SideResults(sha=request.candidate.sha), bench=bench)

    monkeypatch.setattr(job_module, "run_child", fake_child)
    repo = _repo(tmp_path / "repo")
    mirror = Mirror(tmp_path / "data" / "mirrors")
    sha = mirror.resolve(str(repo), "HEAD")
    outcome = gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=None, kernel="tiny"),
                       JobContext(data_dir=tmp_path / "data", options=RunOptions(), mirror=mirror))
    return requests, outcome


def test_a_child_that_died_capturing_graphs_runs_again_with_events_for_every_shape(tmp_path, monkeypatch):
    requests, outcome = _run(tmp_path, monkeypatch, BenchResult(StageStatus.FAILED, CAPTURE_DEATH))
    assert len(requests) == 2
    assert requests[0].kept_methods == {}
    assert requests[1].kept_methods == {f"{shape}/{dtype}": "events" for shape in ("m64_n64_k64", "m128_n128_k128")
                                        for dtype in ("float16", "float32")}
    assert outcome.result.bench.status is StageStatus.PASSED
    (note,) = [n for n in outcome.result.notes if n.startswith(EVENTS_RERUN)]
    assert "operation not permitted when stream is capturing" in note


def test_a_child_that_died_timing_is_not_run_again(tmp_path, monkeypatch):
    died = BenchResult(StageStatus.FAILED, "child exited with code 1 during bench (joint, timing): boom")
    requests, outcome = _run(tmp_path, monkeypatch, died)
    assert len(requests) == 1
    assert outcome.result.bench.status is StageStatus.FAILED
    assert not any(n.startswith(EVENTS_RERUN) for n in outcome.result.notes)
