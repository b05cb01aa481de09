"""Issue 43: a commit that only changes the manifest's flags is judged against the baseline as it was
committed. Real git, real nvcc, `gate run --static-only` on this machine: the baseline is compiled with
its own manifest's flags, so adding `--maxrregcount=24` to a kernel that needs 40 registers shows in
the static delta, and the register rules judge the change."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gate_env import gate_env

# Sixteen accumulators live across the loop: 40 registers on sm_80 with CUDA 13, so 24 spills.
KERNEL = """
__global__ void many_live(const float* __restrict__ x, float* __restrict__ y, int n) {
  float a[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) a[j] = x[threadIdx.x + j];
  for (int i = 0; i < n; ++i) {
#pragma unroll
    for (int j = 0; j < 16; ++j) a[j] = a[j] * a[(j + 1) % 16] + x[i + j];
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 16; ++j) s += a[j];
  y[threadIdx.x] = s;
}
"""
MANIFEST = """[[kernel]]
name = "many_live"
sources = ["k.cu"]
workload = "gemm"
arch = ["sm_80"]
shapes = [{{m = 64, n = 64, k = 64}}]
{flags}
[kernel.gates]
max_registers = 32
max_spill_bytes_increase = 0
"""


def _git(repo: Path, *args: str) -> str:
    ident = ["-c", "user.name=gate", "-c", "user.email=gate@example.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *ident, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, flags: str, message: str) -> str:
    (repo / "k.cu").write_text(KERNEL)
    (repo / "gate.toml").write_text(MANIFEST.format(flags=flags))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_commit_that_only_adds_maxrregcount_is_judged_against_the_baseline_as_committed(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    base = _commit(repo, "", "the kernel, 40 registers")
    sha = _commit(repo, 'nvcc_flags = ["--maxrregcount=24"]', "cap the registers at 24")
    proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), "--sha", sha, "--base", base,
                           "--static-only", "--json"], capture_output=True, text=True, timeout=600,
                          env=gate_env(GATE_DATA_DIR=str(tmp_path / "data")))
    (kernel,) = json.loads(proc.stdout)["kernels"]
    rows = [(r["rule"], r["outcome"], r["reason"]) for r in kernel["rules"]]
    delta = [reason for rule, _, reason in rows if rule == "static_delta"]
    assert "nvcc_flags: + --maxrregcount=24" in delta, rows
    assert any(reason.startswith("sm_80 many_live: registers 40->24, spill bytes 0->124") for reason in delta), rows
    # the register rules judge the change: within 32 registers now, but it spills where the baseline did not
    assert ("max_registers", "pass") in {(rule, outcome) for rule, outcome, _ in rows}
    spills = [(outcome, reason) for rule, outcome, reason in rows if rule == "max_spill_bytes_increase"]
    assert spills and spills[0][0] == "fail" and "0 -> 124, an increase of +124" in spills[0][1], rows
    assert kernel["verdict"] == "reject" and proc.returncode == 1, proc.stderr
    static = kernel["result"]["baseline"]["static"]
    assert static["flags"] == {"nvcc_flags": [], "cxx_flags": []}
    assert static["functions"][0]["registers"] == 40
