// Torch binding of the gate-quality subject: checks, allocates the output, launches on the current stream.
#include <torch/extension.h>  // first: the gate's precompiled header (docs/design.md)
#include <ATen/cuda/CUDAContext.h>

void launch_fma_chain(const float* x, float* y, int n, int iters, cudaStream_t stream);

at::Tensor forward(const at::Tensor& x, int64_t iters) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous(),
              "fma_chain.forward: x must be a contiguous float32 CUDA tensor");
  auto y = at::empty_like(x);
  launch_fma_chain(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<int>(x.numel()),
                   static_cast<int>(iters), at::cuda::getCurrentCUDAStream());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "fma chain"); }
