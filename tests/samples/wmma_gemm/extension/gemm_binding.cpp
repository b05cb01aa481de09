// Torch binding of the WMMA GEMM sample: checks every argument (naming it), then launches the plain
// CUDA kernel on the caller's current stream.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "kernels/wmma_gemm.h"

namespace {

void check_operand(const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == at::kHalf, name, " must be float16, got ", t.scalar_type());
    TORCH_CHECK(t.dim() == 2, name, " must be 2-D, got ", t.dim(), " dimensions");
    TORCH_CHECK(t.is_contiguous(), name, " must be contiguous (row-major)");
    TORCH_CHECK(t.size(0) % 16 == 0 && t.size(1) % 16 == 0,
                name, " sizes must be multiples of 16, got ", t.sizes());
}

}  // namespace

// C[m, n] = A[m, k] * B[n, k]^T in float32.
at::Tensor forward(const at::Tensor& a, const at::Tensor& b) {
    check_operand(a, "a");
    check_operand(b, "b");
    TORCH_CHECK(a.size(1) == b.size(1), "a and b must share k: a is ", a.sizes(), ", b is ", b.sizes());
    TORCH_CHECK(a.device() == b.device(), "a and b must be on the same device");
    const c10::cuda::CUDAGuard guard(a.device());
    at::Tensor c = at::empty({a.size(0), b.size(0)}, a.options().dtype(at::kFloat));
    GemmParams params{};
    params.a = reinterpret_cast<const __half*>(a.data_ptr<at::Half>());
    params.b = reinterpret_cast<const __half*>(b.data_ptr<at::Half>());
    params.c = c.data_ptr<float>();
    params.m = static_cast<int>(a.size(0));
    params.n = static_cast<int>(b.size(0));
    params.k = static_cast<int>(a.size(1));
    const cudaError_t err = wmma_gemm_launch(params, c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "wmma_gemm launch failed: ", cudaGetErrorString(err));
    return c;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", &forward, "C = A * B^T (fp16 in, fp32 out) with WMMA", py::arg("a"), py::arg("b"));
}
