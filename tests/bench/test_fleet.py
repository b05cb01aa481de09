"""bench/fleet.py on the CPU machine (issue 42): a host with two stand-in GPUs (nvidia-smi on PATH)
and the stand-in pipeline (GATE_TEST_PIPELINE) in real `gate serve`, `gate worker` and redis-server
processes. What only the GPU machine can say (verdicts of real kernels, times, the A/A figures) is
the lead's device run: `scripts/device-check.sh fleet`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fakes.gpu_host import write_nvidia_smi

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def host_env(tmp_path, monkeypatch):
    """This process and the ones it starts on a host with two stand-in GPUs, jobs of half a second."""
    bin_dir = write_nvidia_smi(tmp_path / "bin").parent
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("GATE_TEST_PIPELINE", "tests.fakes.fleet_pipeline:gate_job")
    monkeypatch.setenv("FLEET_JOB_S", "0.5")
    monkeypatch.setenv("OUT", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    return tmp_path


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed")
def test_the_batch_takes_both_gpus_one_gpu_and_a_celery_worker_per_gpu(host_env):
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "fleet.py"), "all", "one", "celery"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((host_env / "fleet-all-one-celery.json").read_text())
    assert (results["all"]["gpus_used"], results["one"]["gpus_used"], results["celery"]["gpus_used"]) == \
        ([0, 1], [0], [0, 1])
    for name in ("all", "one", "celery"):
        jobs = results[name]["jobs"]
        assert [j["label"] for j in jobs] == ["notes", "comment", "binding", "macro", "+5 %", "+10 %", "+20 %", "wrong"]
        assert all(j["as_expected"] and j["verdicts"] == 1 and j["attempts"] == 1 for j in jobs), jobs
        assert all(j["reason"].endswith(f"ran on GPU {j['gpu']}") for j in jobs)
    assert {j["worker"].rsplit(":", 1)[-1] for j in results["celery"]["jobs"]} == {"gpu0", "gpu1"}
    table = run.stdout[run.stdout.index("== fleet"):]
    assert "+5 %       " in table and "max_latency_regression_pct" in table and "batch on 2 GPUs / on one: " in table


def test_the_a_a_trials_run_on_gpu_0_beside_jobs_on_the_other_gpus(host_env):
    sys.path.insert(0, str(ROOT / "bench"))
    import fleet

    from gate.nvidia.devices import list_gpus

    gpus = list_gpus()
    quality = [sys.executable, "-c", textwrap.dedent("""
        import json, os, time
        time.sleep(6)                        # the neighbours run meanwhile
        trials = {"regressions": {"1.0": 0, "2.0": 0}, "median_us": 310.0, "median_ratio": 1.0004}
        json.dump({"device": os.environ["CUDA_VISIBLE_DEVICES"], "trials": 20,
                   "aa_large": {**trials, "bias": {"mean_shift_pct": 0.01, "median_shift_pct": 0.02}},
                   "det3_large": {**trials, "regressions": {"1.0": 20, "2.0": 20}}},
                  open(os.path.join(os.environ["OUT"], "gate_quality-aa-det.json"), "w"))
    """)]
    repo, base, shas = fleet.subject_repo(host_env)
    found = fleet.aa(host_env, repo, base, shas, gpus, host_env, quality=quality)
    assert found["device"] == gpus[0].uuid                   # the trials saw GPU 0 alone
    assert found["neighbour_jobs"] >= 1                      # while GPU 1 gated revisions
    assert found["aa_large"]["regressions_1pct"] == 0 and found["det3_large"]["regressions_1pct"] == 20
