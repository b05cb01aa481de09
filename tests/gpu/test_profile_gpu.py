"""The profile stage end to end on a real GPU: build a tiny transpose extension, profile it with ncu.

The same 32x32 shared-memory transpose runs without padding (32-way bank conflicts on the column
read) and with one float of padding per row: the stage must attribute each launch to its shape
through NVTX and tell the two apart by conflict rate. Run on the device machine with `-m gpu`;
set GATE_GPU_SUMMARY to a file path to keep the measured figures.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.domain import KernelSpec, Shape, StageStatus
from gate.domain.job import RunOptions
from tests.gate_env import with_pythonpath

pytestmark = pytest.mark.gpu

KERNEL_CU = r"""
#include <cuda_runtime.h>
template <int PAD>
__global__ void transpose_smem(const float* in, float* out, int n) {
    __shared__ float tile[32][32 + PAD];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
void launch_transpose(const float* in, float* out, int n, bool padded, void* stream) {
    dim3 grid(n / 32, n / 32), block(32, 8);
    auto s = static_cast<cudaStream_t>(stream);
    if (padded) transpose_smem<1><<<grid, block, 0, s>>>(in, out, n);
    else transpose_smem<0><<<grid, block, 0, s>>>(in, out, n);
}
"""

BINDING_CPP = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
void launch_transpose(const float* in, float* out, int n, bool padded, void* stream);
torch::Tensor transpose(torch::Tensor x, bool padded) {
    TORCH_CHECK(x.is_cuda() && x.dtype() == torch::kFloat32 && x.is_contiguous(), "x: contiguous float32 CUDA");
    TORCH_CHECK(x.dim() == 2 && x.size(0) == x.size(1) && x.size(0) % 32 == 0, "x: square, side a multiple of 32");
    auto out = torch::empty_like(x);
    launch_transpose(x.data_ptr<float>(), out.data_ptr<float>(), x.size(0), padded,
                     c10::cuda::getCurrentCUDAStream().stream());
    return out;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("transpose", &transpose); }
"""

WORKLOAD_PY = '''
import torch

class _Transpose:
    def make_inputs(self, shape, dtype, seed, device):
        gen = torch.Generator(device=device).manual_seed(seed)
        n = shape.params["n"]
        return {"x": torch.randn(n, n, generator=gen, device=device), "padded": shape.params["padded"]}

    def call(self, module, function_name, inputs):
        return getattr(module, function_name)(inputs["x"], inputs["padded"])

def get_workload(kernel, src_dir):
    return _Transpose()
'''


def test_profile_tells_a_conflicting_transpose_from_a_padded_one(tmp_path: Path, monkeypatch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ncu = os.environ.get("GATE_NCU_PATH", "ncu")
    if shutil.which(ncu) is None:
        pytest.skip(f"{ncu} not found")
    from torch.utils.cpp_extension import load

    from gate.profiling.ncu_isolated import ReportReader
    from gate.profiling.profile import profile

    (tmp_path / "transpose.cu").write_text(KERNEL_CU)
    (tmp_path / "binding.cpp").write_text(BINDING_CPP)
    (tmp_path / "tiny_workload.py").write_text(WORKLOAD_PY)
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    module = load(name="gate_tiny_transpose", sources=[str(tmp_path / "binding.cpp"),
                  str(tmp_path / "transpose.cu")], build_directory=str(build_dir))
    x = torch.randn(256, 256, device="cuda")
    assert torch.equal(module.transpose(x, False), x.t()) and torch.equal(module.transpose(x, True), x.t())

    monkeypatch.setenv("PYTHONPATH", with_pythonpath(tmp_path))   # keep the carried wheels
    kernel = KernelSpec(name="tiny_transpose", sources=["transpose.cu", "binding.cpp"],
                        function="transpose", workload="tiny_workload:get_workload",
                        shapes=[Shape({"n": 4096, "padded": False}), Shape({"n": 4096, "padded": True})],
                        dtypes=["float32"])
    options = RunOptions(ncu_path=ncu, ncu_clock_control="none")   # workplace rule: clocks untouched
    result = profile(kernel, module.__file__, tmp_path, tmp_path / "profile", options,
                     workload_factory="tiny_workload:get_workload")

    summary = {"status": result.status, "reason": result.reason, "duration_s": result.duration_s,
               "ncu_version": result.ncu_version,
               "kernels": [{"kernel": k.kernel, "shape": k.shape, "ld_conflict_pct": k.ld_bank_conflict_pct,
                            "duration_ns": k.duration_ns, "passes": k.replay_passes,
                            "missing": k.missing_metrics} for k in result.kernels],
               "nvtx": [list(launch.nvtx_ranges) for launch in ReportReader(ncu).read(Path(result.report_path))]
               if result.report_path else [], "log_tail": result.log[-4000:]}
    if os.environ.get("GATE_GPU_SUMMARY"):
        Path(os.environ["GATE_GPU_SUMMARY"]).write_text(json.dumps(summary, indent=2))
        shutil.copy(result.report_path, Path(os.environ["GATE_GPU_SUMMARY"]).with_suffix(".ncu-rep"))
    assert result.status == StageStatus.PASSED, result.reason + "\n" + result.log
    by_shape = {k.shape: k for k in result.kernels}
    assert set(by_shape) == {"n4096", "n4096_padded"}, summary
    assert by_shape["n4096"].ld_bank_conflict_pct > 90
    assert by_shape["n4096_padded"].ld_bank_conflict_pct < 10
    assert all(not k.missing_metrics for k in result.kernels), summary
    assert result.ncu_version
