"""With the real nvcc: an edit to a file renames its anonymous namespace (nvcc hashes the file's
contents into `_GLOBAL__N__<hash>`), and the static delta still pairs the kernel across the two
builds (issue 26)."""

import shutil

import pytest

from gate.compiling.static import run_static
from gate.domain import Gates, KernelSpec, StageStatus
from gate.domain.results import JobResult, SideResults
from gate.verdict.decide import decide

pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]

SOURCE = """namespace {
template <int N> __global__ void conv_fwd_kernel(float* x) { x[threadIdx.x] = N * x[threadIdx.x]; }
}
void launch(float* x) { conv_fwd_kernel<4><<<1, 32>>>(x); }
"""


def test_an_edited_file_keeps_its_anonymous_kernels_static_delta(tmp_path):
    spec = KernelSpec(name="conv", sources=["conv.cu"], arch=["sm_90"])
    results = {}
    for side, text in (("base", SOURCE), ("cand", SOURCE.replace("N * x", "N * x[threadIdx.x] + x"))):
        (tmp_path / side).mkdir()
        (tmp_path / side / "conv.cu").write_text(text)
        results[side] = run_static(spec, tmp_path / side, tmp_path / "out" / side, cache_dir=tmp_path / "cache")
        assert results[side].status is StageStatus.PASSED, results[side].reason
    (cand_fn,), (base_fn,) = results["cand"].functions, results["base"].functions
    assert cand_fn.function != base_fn.function            # the per-file hash differs
    job = JobResult(kernel="conv", candidate=SideResults(sha="c" * 40, static=results["cand"]),
                    baseline=SideResults(sha="b" * 40, static=results["base"]))
    rows = [r for r in decide(job, Gates(max_registers_increase=64)).rules if r.rule == "max_registers_increase"]
    assert len(rows) == 1 and rows[0].reason.startswith("sm_90 conv_fwd_kernel<4>: registers ")
