"""`gate run` end to end on this machine: real git, real nvcc, the real child process."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.samples.build import commit_files, make_repo
from tests.gate_env import gate_env

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def gate_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = gate_env(GATE_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-m", "gate.cli", "run", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.nvcc
@needs_nvcc
def test_gate_run_json_on_a_cpu_machine_is_incomplete_with_static_figures(tmp_path):
    repo, shas = make_repo(tmp_path, variants=["slower"])
    proc = gate_run(tmp_path, "--repo", str(repo), "--sha", shas["slower"], "--json")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["sha"], doc["base_sha"], doc["verdict"]) == (shas["slower"], shas["base"], "incomplete")
    (kernel,) = doc["kernels"]
    assert kernel["verdict"] == "incomplete"
    result = kernel["result"]
    functions = result["candidate"]["static"]["functions"]
    assert {f["arch"] for f in functions} == {"sm_80", "sm_90"}
    for f in functions:
        assert f["function"] == "_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams"
        assert 0 < f["registers"] <= 255
        assert f["smem_bytes"] == 0                          # fragments are loaded from global memory
        assert f["spill_store_bytes"] == 0 and f["spill_load_bytes"] == 0
        assert f["sass_opcodes"]["HMMA"] > 0
    for stage in ("build", "correctness", "profile"):
        assert result["candidate"][stage] == {**result["candidate"][stage], "status": "not_run",
                                              "reason": "not run: no CUDA device"}
    assert result["bench"]["status"] == "not_run"
    outcomes = {(r["rule"], r["outcome"]) for r in kernel["rules"]}
    assert ("require_sass", "pass") in outcomes and ("build", "not_run") in outcomes
    assert {a["kind"] for a in kernel["artifacts"]} >= {"ptxas_log", "result_json"}
    assert "static" in proc.stderr and "not run: no CUDA device" in proc.stderr   # live progress


@pytest.mark.nvcc
@needs_nvcc
def test_gate_run_rejects_a_compile_error_with_the_compiler_line(tmp_path):
    repo, shas = make_repo(tmp_path, variants=["compile_error"])
    proc = gate_run(tmp_path, "--repo", str(repo), "--sha", "variant/compile_error")
    assert proc.returncode == 1, proc.stderr
    assert "wmma_gemm: REJECT" in proc.stdout
    assert 'identifier "zero_value" is undefined' in proc.stdout


@pytest.mark.parametrize(("change", "named"), [
    (lambda t: t.replace("max_spill_bytes = 0", "max_spill_bytes = 0\nmax_bankconflict_pct = 5"),
     "gate.toml: kernel[0].gates.max_bankconflict_pct: unknown key"),
    (lambda t: t.replace('"kernels/wmma_gemm.cu"', '"../x.cu"'),
     "gate.toml: kernel[0].sources[0]: '../x.cu' leaves the repository"),
    (lambda t: t.replace('"kernels/wmma_gemm.cu"', '"kernels/gone.cu"'),
     "gate.toml: kernel[0].sources[0]: 'kernels/gone.cu' does not exist"),
])
def test_gate_run_refuses_a_bad_manifest_naming_the_key_or_path(tmp_path, change, named):
    repo, _ = make_repo(tmp_path)
    commit_files(repo, {"gate.toml": change((repo / "gate.toml").read_text())}, "break the manifest")
    proc = gate_run(tmp_path, "--repo", str(repo), "--json")
    assert proc.returncode == 2
    assert named in proc.stderr
    assert proc.stdout == ""


def test_gate_run_refuses_a_sha_that_does_not_exist(tmp_path):
    repo, _ = make_repo(tmp_path)
    proc = gate_run(tmp_path, "--repo", str(repo), "--sha", "0123456789abcdef0123456789abcdef01234567")
    assert proc.returncode == 2
    assert "0123456789abcdef0123456789abcdef01234567" in proc.stderr and "does not exist" in proc.stderr


def test_gate_run_refuses_an_unknown_kernel(tmp_path):
    repo, _ = make_repo(tmp_path)
    proc = gate_run(tmp_path, "--repo", str(repo), "--kernel", "nope")
    assert proc.returncode == 2
    assert "no kernel named 'nope'" in proc.stderr


@pytest.mark.nvcc
@needs_nvcc
def test_gate_run_works_with_a_data_dir_relative_to_where_it_is_started(tmp_path):
    """The job's child runs in its own artifacts directory, so a relative path handed to it (or to
    its box) pointed nowhere: bwrap once failed with "Can't find source path .gate/artifacts/.../candidate"."""
    repo, _ = make_repo(tmp_path, variants=["compile_error"])
    work = tmp_path / "work"
    work.mkdir()
    env = gate_env(GATE_DATA_DIR="data")
    env.pop("GATE_DATABASE_URL", None)
    proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), "--sha",
                           "variant/compile_error"], capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert proc.returncode == 1, proc.stderr
    assert 'identifier "zero_value" is undefined' in proc.stdout      # the child ran and compiled
    assert (work / "data" / "mirrors").is_dir()


@pytest.mark.nvcc
@needs_nvcc
@pytest.mark.parametrize("data_dir", [None, ".gate"], ids=["default", "inside-the-repo"])
def test_gate_run_in_a_committed_repository_gates_the_commit_every_time(tmp_path, data_dir):
    """`cd repo && gate run --repo .` twice: the first run's cache must not make the second gate
    "uncommitted changes". By default the cache is in the user's state folder, outside the repository;
    set inside it, it is left out of the snapshot."""
    repo, shas = make_repo(tmp_path, variants=["compile_error"])
    subprocess.run(["git", "checkout", "-q", "variant/compile_error"], cwd=repo, check=True)
    state = tmp_path / "state"
    env = {k: v for k, v in gate_env(XDG_STATE_HOME=str(state)).items()
           if k not in ("GATE_DATA_DIR", "GATE_DATABASE_URL")}
    if data_dir:
        env["GATE_DATA_DIR"] = data_dir
    for attempt in (1, 2):
        proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", "."], capture_output=True,
                              text=True, env=env, cwd=repo, timeout=600)
        assert proc.returncode == 1, proc.stderr                          # the compile error rejects
        first = proc.stdout.splitlines()[0]
        assert first == f"revision {shas['compile_error']}  baseline {shas['base']}", (attempt, first)
    expected = repo / data_dir if data_dir else state / "flashcore-gate"
    assert (expected / "mirrors").is_dir()
    assert data_dir or not (repo / ".gate").exists()


@pytest.mark.nvcc
@needs_nvcc
def test_gate_run_static_only_compiles_and_runs_no_gpu_stage_naming_why(tmp_path):
    """`--static-only`: registers, spills and SASS, and every GPU stage `not_run` as disabled (not
    "no CUDA device": on a GPU machine too), so the verdict is incomplete, never accept."""
    repo, shas = make_repo(tmp_path, variants=["slower"])
    proc = gate_run(tmp_path, "--repo", str(repo), "--sha", shas["slower"], "--static-only", "--json")
    assert proc.returncode == 3, proc.stderr
    (kernel,) = json.loads(proc.stdout)["kernels"]
    assert kernel["verdict"] == "incomplete"
    result = kernel["result"]
    assert result["candidate"]["static"]["status"] == "passed"
    assert all(f["sass_opcodes"]["HMMA"] > 0 for f in result["candidate"]["static"]["functions"])
    for stage in ("build", "correctness", "profile"):
        assert result["candidate"][stage]["reason"] == "not run: GPU stages disabled"
    assert result["bench"]["status"] == "not_run"
