"""max_global_sectors_per_request on a real GPU (issue 23, point 7): two tiny copy kernels, one
reading `in[i * 32]` (every thread its own 32-B sector: 32 sectors per warp request), one reading
`in[i]` (a warp's 128 B: 4 sectors), profiled by the profile stage with the gate's own metric list,
then judged by the verdict's ncu rows: the strided one is rejected by the new gate, the coalesced one
accepted. A second test profiles once without the two new counters and compares the replay passes:
the gate was meant to cost no extra pass.

Run on the device machine with `-m gpu`; set GATE_GPU_SUMMARY to a file path to keep the figures.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.domain import Gates, KernelSpec, RuleOutcome, Shape, StageStatus
from gate.domain.job import RunOptions
from gate.domain.rule_catalog import Rule
from tests.gate_env import with_pythonpath

pytestmark = pytest.mark.gpu

STRIDE = 32          # floats: 128 B apart, so each thread of a warp reads a different sector

KERNEL_CU = r"""
#include <cuda_runtime.h>
template <int STRIDE>
__global__ void copy_every(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[(long long)i * STRIDE];
}
void launch_copy(const float* in, float* out, int n, bool strided, void* stream) {
    auto s = static_cast<cudaStream_t>(stream);
    int blocks = (n + 255) / 256;
    if (strided) copy_every<32><<<blocks, 256, 0, s>>>(in, out, n);
    else copy_every<1><<<blocks, 256, 0, s>>>(in, out, n);
}
"""

BINDING_CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
void launch_copy(const float* in, float* out, int n, bool strided, void* stream);
torch::Tensor copy(torch::Tensor x, int64_t n, bool strided) {
    TORCH_CHECK(x.is_cuda() && x.dtype() == torch::kFloat32 && x.is_contiguous(), "x: contiguous float32 CUDA");
    TORCH_CHECK(x.numel() >= n * (strided ? 32 : 1), "x: too small for n elements at this stride");
    auto out = torch::empty({n}, x.options());
    launch_copy(x.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(n), strided,
                c10::cuda::getCurrentCUDAStream().stream());
    return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("copy", &copy); }
"""

WORKLOAD_PY = '''
import torch

class _Copy:
    def make_inputs(self, shape, dtype, seed, device):
        gen = torch.Generator(device=device).manual_seed(seed)
        n = shape.params["n"]
        return {"x": torch.randn(n * 32, generator=gen, device=device), "n": n,
                "strided": shape.params.get("strided", False)}

    def call(self, module, function_name, inputs):
        return getattr(module, function_name)(inputs["x"], inputs["n"], inputs["strided"])

def get_workload(kernel, src_dir):
    return _Copy()
'''

SHAPES = [Shape({"n": 1 << 22}), Shape({"n": 1 << 22, "strided": True})]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ncu = os.environ.get("GATE_NCU_PATH", "ncu")
    if shutil.which(ncu) is None:
        pytest.skip(f"{ncu} not found")
    from torch.utils.cpp_extension import load

    root = tmp_path_factory.mktemp("sectors")
    (root / "copy.cu").write_text(KERNEL_CU)
    (root / "binding.cpp").write_text(BINDING_CPP)
    (root / "copy_workload.py").write_text(WORKLOAD_PY)
    (root / "build").mkdir()
    module = load(name="gate_sectors_copy", sources=[str(root / "binding.cpp"), str(root / "copy.cu")],
                  build_directory=str(root / "build"))
    x = torch.randn(1024 * STRIDE, device="cuda")
    assert torch.equal(module.copy(x, 1024, True), x[::STRIDE]) and torch.equal(module.copy(x, 1024, False), x[:1024])
    return root, module, ncu


def _profile(built, monkeypatch, out: str):  # noqa: ANN001, ANN202
    from gate.profiling.profile import profile

    root, module, ncu = built
    monkeypatch.setenv("PYTHONPATH", with_pythonpath(root))   # keep the carried wheels
    kernel = KernelSpec(name="sectors_copy", sources=["copy.cu", "binding.cpp"], function="copy",
                        workload="copy_workload:get_workload", shapes=SHAPES, dtypes=["float32"])
    options = RunOptions(ncu_path=ncu, ncu_clock_control="none")   # workplace rule: clocks untouched
    return profile(kernel, module.__file__, root, root / out, options, workload_factory="copy_workload:get_workload")


def _summary(name: str, figures: dict) -> None:
    if os.environ.get("GATE_GPU_SUMMARY"):
        path = Path(os.environ["GATE_GPU_SUMMARY"]).with_name(f"sectors-{name}.json")
        path.write_text(json.dumps(figures, indent=2, default=str))


def test_the_gate_rejects_strided_global_loads_and_accepts_coalesced_ones(built, monkeypatch):
    from gate.verdict.rules import ncu_absolute_rows

    result = _profile(built, monkeypatch, "profile")
    assert result.status == StageStatus.PASSED, result.reason + "\n" + result.log
    by_shape = {k.shape: k for k in result.kernels}
    rows = ncu_absolute_rows(result, Gates(max_global_sectors_per_request=8))
    _summary("verdict", {"kernels": {s: {"sectors": k.global_ld_sectors, "requests": k.global_ld_requests,
                                         "per_request": k.global_sectors_per_request, "passes": k.replay_passes,
                                         "missing": k.missing_metrics} for s, k in by_shape.items()},
                         "rows": [(r.rule, r.shape, r.outcome, r.value, r.reason) for r in rows]})
    assert set(by_shape) == {"n4194304", "n4194304_strided"}
    assert by_shape["n4194304"].global_sectors_per_request == pytest.approx(4.0, abs=0.1)
    assert by_shape["n4194304_strided"].global_sectors_per_request == pytest.approx(32.0, abs=0.5)
    outcome = {r.shape: r.outcome for r in rows if r.rule == Rule.MAX_GLOBAL_SECTORS_PER_REQUEST}
    assert outcome == {"n4194304": RuleOutcome.PASS, "n4194304_strided": RuleOutcome.FAIL}


def test_the_two_counters_add_no_replay_pass(built, monkeypatch):
    import gate.profiling.profile as profile_stage

    with_counters = _profile(built, monkeypatch, "with")
    names = profile_stage.requested_metrics
    new = {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"}
    monkeypatch.setattr(profile_stage, "requested_metrics", lambda arch: [n for n in names(arch) if n not in new])
    without = _profile(built, monkeypatch, "without")
    passes = {"with": [k.replay_passes for k in with_counters.kernels],
              "without": [k.replay_passes for k in without.kernels]}
    _summary("passes", passes)
    assert with_counters.status == without.status == StageStatus.PASSED
    assert passes["with"] == passes["without"], passes
