"""Issue 43 on a real GPU: the baseline as it was committed, and a flaky kernel caught.

- `ptxas_O0`: a commit that only adds `nvcc_flags = ["-Xptxas=-O0"]` to the WMMA GEMM's manifest.
  The baseline is built from its own manifest (no flag), so the candidate reads ~3x slower and is
  rejected on latency; the static delta names the flag. (Before, the baseline was built with the
  candidate's flags too, and the job accepted "+0.2 %".)
- `flaky`: honest for 40 calls, then wrong on ~1 call in 8 chosen with rand() (half of C unwritten).
  Its job must be rejected by `timed_outputs` in 20 jobs of 20, whatever the timing method: the
  checking pass (gate/timing/timed_checks.py) checks >= 146 calls per job, so one job escapes with
  probability (7/8)^146 = 3e-9. The 20 jobs cycle through events, graphs (the history's kept method)
  and the isolated pacing (`flaky_own_process`: the baseline in a side host); one shape, no profile.

    python -m pytest tests/gpu/test_baseline_committed_gpu.py -m gpu -s      (~3 minutes on an H200)

prints one line per job: verdict, seconds, the deciding reason and the bench's count of checked calls.
"""

import time
from pathlib import Path

import pytest

from gate.domain.job import JobOrder, RunOptions, method_key
from gate.executors.job import JobContext, gate_job
from gate.executors.spare import Spares
from gate.sources.mirror import Mirror
from gate.timing.timed_checks import CHECKED_PER_JOB
from tests.gpu.test_cheat_catalogue import KERNEL, _prebuild
from tests.samples.build import make_repo

pytestmark = pytest.mark.gpu

JOBS = 20
METHODS = ("events", "graph", "isolated")
FLAKY_SHAPE = method_key("m1024_n1024_k1024", "float16")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("committed")
    repo, shas = make_repo(root, variants=["flaky", "flaky_own_process", "ptxas_O0"])
    data = root / "data"
    for name in ("base", "flaky", "ptxas_O0"):      # the objects once, so that each job measures the gate
        _prebuild(repo, shas[name], root / "pre" / name, data / "objects")
    spares = Spares(data / "spares", hidden=(data,))
    yield repo, shas, data, Mirror(data / "mirrors"), spares
    spares.close()


def _gate(repo, variant: str, kept: dict[str, str] | None = None, budget_s: float = 0.5):
    path, shas, data, mirror, spares = repo
    options = RunOptions(bench_budget_s=budget_s, build_cache_dir=str(data / "objects"), ncu_clock_control="none")
    start = time.perf_counter()
    outcome = gate_job(JobOrder(repo=str(path), sha=shas[variant], base_sha=shas["base"], kernel=KERNEL,
                                kept_methods=kept or {}),
                       JobContext(data_dir=data, options=options, mirror=mirror, spares=spares))
    bench = outcome.result.bench
    print(f"\n| {variant} | {outcome.report.verdict.value} | {time.perf_counter() - start:.1f} s | "
          f"{outcome.report.reason[:300]} | {bench.reason if bench else '-'} |")
    return outcome


def test_a_commit_that_only_adds_ptxas_O0_is_rejected_on_latency(repo):
    outcome = _gate(repo, "ptxas_O0", budget_s=2.0)
    report = outcome.report
    assert report.verdict.value == "reject", report.reason
    assert report.reason.startswith("reject: max_latency_regression_pct"), report.reason
    assert any(r.rule == "static_delta" and r.reason == "nvcc_flags: + -Xptxas=-O0" for r in report.rules)
    # the H200 job read 1,868 us against 591 us at the large shape (3.2x): the baseline was built
    # with the candidate's flag then, and the job accepted "+0.2 %"
    ratios = [st.ratio for st in outcome.result.bench.shapes]
    assert max(ratios) > 1.5, ratios


@pytest.mark.parametrize("job", range(JOBS))
def test_a_kernel_wrong_on_one_call_in_eight_is_rejected_in_every_job(repo, job):
    method = METHODS[job % len(METHODS)]
    variant = "flaky_own_process" if method == "isolated" else "flaky"
    kept = {} if method == "isolated" else {FLAKY_SHAPE: method}
    outcome = _gate(repo, variant, kept)
    report, bench = outcome.report, outcome.result.bench
    assert report.verdict.value == "reject", report.reason
    assert report.reason.startswith("reject: timed_outputs"), report.reason
    (st,) = bench.shapes
    assert st.timed_checked >= CHECKED_PER_JOB and st.timed_wrong > 0, st.timed_evidence
    if method != "isolated":
        assert st.method == method, st.method_note
    else:
        assert "own process" in bench.reason, bench.reason
