"""The gate's own stages on FlashCore's e4m3 forward (`flashcore_wgmma` with float8_e4m3fn inputs and a
bf16 output): a repository that declares `dtypes = ["float8_e4m3fn"]` is built, checked against the
float64 reference of the same e4m3 values, timed and profiled, and accepted as a new kernel; the same
kernel with Vᵀ's keys in the wrong order is rejected by correctness, naming the e4m3 tolerance."""

import shutil
import subprocess
from pathlib import Path

import pytest

from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.domain.results import StageStatus
from gate.domain.verdict import Verdict
from gate.manifest.load import load_manifest
from gate.pipeline import run
from gate.verdict.decide import decide

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
MANIFEST = """\
[[kernel]]
name = "flashcore_wgmma"
sources = ["kernels/flashcore/wgmma.cu", "extension/flashcore_binding.cpp"]
function = "forward"
workload = "attention"
arch = ["sm_90a"]
shapes = [{b = 1, h = 8, s = 512, d = 64, causal = false}, {b = 2, h = 4, s = 1000, d = 128, causal = true}]
dtypes = ["float8_e4m3fn"]

[kernel.gates]
max_latency_regression_pct = 3
max_spill_bytes = 0
require_sass = ["QGMMA"]
"""
# The transpose's key order inside every 16 (params.h); the naive order sends P's bytes to the wrong V rows.
KEY_ORDER = "tile[16 * g + 2 * t + 8 * (e >> 1) + (e & 1)][d]"


def repository(tmp_path: Path, edit=None) -> Checkout:
    dest = tmp_path / "repo"
    shutil.copytree(REPO / "kernels" / "flashcore", dest / "kernels" / "flashcore")
    (dest / "extension").mkdir()
    shutil.copy2(REPO / "extension" / "flashcore_binding.cpp", dest / "extension")
    (dest / "gate.toml").write_text(MANIFEST)
    if edit:
        cu = dest / "kernels" / "flashcore" / "wgmma.cu"
        text = cu.read_text()
        assert text.count(KEY_ORDER) == 1
        cu.write_text(text.replace(KEY_ORDER, edit))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(dest)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "e4m3"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    return Checkout(sha, str(dest))


def gate(tmp_path: Path, checkout: Checkout):
    (spec,) = load_manifest(Path(checkout.path)).kernels
    request = JobRequest(spec, checkout, str(tmp_path / "art"), None, RunOptions(build_cache_dir=str(tmp_path / "cache")))
    result = run.measure(request, lambda event: None)
    result.new_kernel = True
    return spec, result, decide(result, spec.gates)


def test_an_e4m3_kernel_is_checked_timed_profiled_and_accepted(tmp_path):
    spec, result, report = gate(tmp_path, repository(tmp_path))
    assert report.verdict is Verdict.ACCEPT, report.reason
    cases = result.candidate.correctness.cases
    assert cases and all(c.passed and c.dtype == "float8_e4m3fn" for c in cases)
    assert all(c.max_abs_err is not None and 0 < c.max_abs_err <= c.tolerance for c in cases)
    assert result.bench.status is StageStatus.PASSED, result.bench.reason
    assert len(result.bench.shapes) == len(spec.shapes)
    assert result.candidate.profile.status is StageStatus.PASSED, result.candidate.profile.reason
    profiled = {k.kernel for k in result.candidate.profile.kernels}
    assert any("flashcore_wgmma_fwd_kernel" in name for name in profiled), profiled
    for c in cases:
        print(f"{c.shape} {c.dtype} seed {c.seed}: max_err {c.max_abs_err:.3g} <= {c.tolerance:.3g}")
    for k in result.candidate.profile.kernels:
        print(f"{k.shape} {k.kernel}: {k.duration_ns} ns, tensor pipe {k.tensor_pipe_pct} %")


def test_vt_keys_in_the_wrong_order_are_rejected_by_correctness(tmp_path):
    _, result, report = gate(tmp_path, repository(tmp_path, "tile[16 * g + 4 * t + e][d]"))
    assert report.verdict is Verdict.REJECT, report.reason
    assert result.candidate.correctness.status is StageStatus.FAILED
    assert "float8_e4m3fn tolerance" in result.candidate.correctness.reason, result.candidate.correctness.reason
