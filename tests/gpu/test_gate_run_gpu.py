"""`gate run` on a real GPU, every stage, on the WMMA GEMM sample and the variants it must reject."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.samples.build import make_repo
from tests.gate_env import gate_env

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("sample"), variants=["unwritten_tile", "bank_conflicts",
                                                                   "compile_error"])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")   # one object cache for the module: warm builds


def gate_run(data_dir: Path, repo: Path, *args: str) -> tuple[int, dict, str]:
    env = gate_env(GATE_DATA_DIR=str(data_dir), GATE_BENCH_BUDGET_S="3")
    proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), *args, "--json"],
                          capture_output=True, text=True, env=env, timeout=900)
    print(proc.stderr[-4000:])   # the live progress, kept in the log as evidence
    (kernel,) = json.loads(proc.stdout)["kernels"]
    return proc.returncode, kernel, proc.stderr


def rule(kernel: dict, name: str) -> list[dict]:
    return [r for r in kernel["rules"] if r["rule"] == name]


def test_the_correct_kernel_is_accepted_with_every_stage_figure(sample, data_dir):
    repo, shas = sample
    code, kernel, err = gate_run(data_dir, repo, "--sha", shas["base"], "--base", shas["base"])
    assert (code, kernel["verdict"]) == (0, "accept"), kernel["reason"]
    result = kernel["result"]
    cand = result["candidate"]
    for stage in ("static", "build", "correctness", "profile"):
        assert cand[stage]["status"] == "passed", (stage, cand[stage]["reason"])
    assert all(c["passed"] and c["max_abs_err"] is not None for c in cand["correctness"]["cases"])
    timings = result["bench"]["shapes"]
    assert len(timings) == 3 and all(t["ratio"] and t["baseline"] for t in timings)   # A/A: no alarm
    assert all("cublas" in t["peers"] for t in timings)
    metrics = cand["profile"]["kernels"]
    assert metrics and all(m["tensor_pipe_pct"] and m["tensor_pipe_pct"] > 0 for m in metrics)
    assert result["fingerprint"]["gpu_name"] and result["fingerprint"]["sm_count"]


def test_an_unwritten_output_tile_is_rejected_by_correctness(sample, data_dir):
    repo, shas = sample
    code, kernel, _ = gate_run(data_dir, repo, "--sha", shas["unwritten_tile"])
    assert (code, kernel["verdict"]) == (1, "reject")
    failed = [r for r in rule(kernel, "correctness") if r["outcome"] == "fail"]
    assert failed and kernel["reason"].startswith("reject: correctness")


def test_bank_conflicts_are_rejected_with_the_measured_rate(sample, data_dir):
    repo, shas = sample
    code, kernel, _ = gate_run(data_dir, repo, "--sha", shas["bank_conflicts"])
    assert (code, kernel["verdict"]) == (1, "reject")
    failed = [r for r in rule(kernel, "max_bank_conflict_pct") if r["outcome"] == "fail"]
    assert failed and all(r["value"] > r["threshold"] for r in failed)
    print("measured bank-conflict rates:", [(r["shape"], r["value"]) for r in failed])


def test_a_compile_error_is_rejected_with_the_log(sample, data_dir):
    repo, shas = sample
    code, kernel, _ = gate_run(data_dir, repo, "--sha", shas["compile_error"])
    assert (code, kernel["verdict"]) == (1, "reject")
    assert "error" in kernel["reason"]


def test_measured_results_read_back_typed_into_every_revision_figure(sample, data_dir):
    """The read side on real measurements (issue 23): the JSON a GPU job stores decodes into the
    domain's types with nothing lost (a field renamed on one side would fail here, not draw an empty
    chart), and the revision page's figures and GPU-watch panel are built from those types."""
    from gate.domain import JobResult
    from gate.domain.codec import from_json, to_json
    from gate.domain.verdict import RuleRow
    from gate.figures.gpu_watch import gpu_watch_panel
    from gate.figures.revision import ncu_figure, sass_figure, timing_figure

    repo, shas = sample
    code, kernel, _ = gate_run(data_dir, repo, "--sha", shas["base"], "--base", shas["base"])
    assert code == 0, kernel["reason"]
    result = from_json(JobResult, kernel["result"])
    assert to_json(result) == kernel["result"]                     # a lossless round trip
    rules = from_json(list[RuleRow], kernel["rules"])
    assert to_json(rules) == kernel["rules"]
    timings = [timing_figure(t) for t in result.bench.shapes]
    assert all({"candidate", "baseline", "cublas"} <= {trace["name"] for trace in f["data"]} for f in timings)
    panel = gpu_watch_panel(result.bench, "measured", None)
    rows = dict(panel.rows)
    assert rows["clock policy"].startswith(result.bench.clock_policy)
    if result.bench.gpu_watch is not None and result.bench.gpu_watch.available:
        assert rows["SM clock"] != "n/a"
    ncu = ncu_figure(result.candidate.profile.kernels, [])
    assert ncu["data"][0]["y"] and all(y is None or y >= 0 for y in ncu["data"][0]["y"])
    if result.candidate.static.sass_available:
        assert sass_figure(result.candidate.static.functions)["data"]


def test_the_profile_sessions_are_ready_before_the_go_and_unseen_by_the_bench(sample, data_dir):
    """The head start (gate/pipeline/ahead.py): each profile session made its CUDA context during the
    CPU stages, so its stage begins at the go; the bench's GPU watch counted the waiting sessions as
    the job's own processes, not as another program sharing the GPU."""
    repo, shas = sample
    code, kernel, err = gate_run(data_dir, repo, "--sha", shas["base"], "--base", shas["base"])
    assert code == 0, kernel["reason"]
    result = kernel["result"]
    assert "CUDA context ready before the go" in result["candidate"]["profile"]["reason"], err
    watch = result["bench"]["gpu_watch"]
    assert watch["other_processes"] == [] and not any("shared" in p for p in watch["problems"]), watch


def test_a_job_run_by_a_spare_child_gives_the_verdict_a_child_of_its_own_gives(sample, tmp_path):
    """gate/executors/spare.py on a GPU: the second job's child was started (torch imported, CUDA
    context made) when the first job's ended; the job tells it so, decides the same A/A accept, and its
    bench's GPU watch saw no other program (the waiting spare is the job's own child)."""
    from gate.domain.job import JobOrder, RunOptions
    from gate.executors.job import JobContext, gate_job
    from gate.executors.spare import Spares
    from gate.sources.mirror import Mirror

    repo, shas = sample
    data = tmp_path / "data"
    options = RunOptions(build_cache_dir=str(data / "build-cache"), bench_budget_s=3.0, ncu_clock_control="none")
    spares = Spares(data / "spares", hidden=(data,))
    mirror = Mirror(data / "mirrors")
    try:
        order = JobOrder(repo=str(repo), sha=shas["base"], base_sha=shas["base"], kernel="wmma_gemm")
        outcomes = [gate_job(order, JobContext(data_dir=data, options=options, mirror=mirror, spares=spares))
                    for _ in range(2)]
    finally:
        spares.close()
    first, second = outcomes
    assert not any("(a spare)" in n for n in first.result.notes)
    assert any("(a spare)" in n for n in second.result.notes), second.result.notes
    for outcome in outcomes:
        assert outcome.report.verdict.value == "accept", outcome.report.reason
        watch = outcome.result.bench.gpu_watch
        assert watch.other_processes == [] and not any("shared" in p for p in watch.problems), watch
    assert not (data / "spares").exists()
