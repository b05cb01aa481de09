// Torch binding shared by every FlashCore kernel: checks the arguments (each message names the
// argument), allocates the output, fills FlashParams and launches on the current stream. The
// kernel .cu it is linked with defines flashcore_forward() and includes no torch headers.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

#include <optional>

#include "../kernels/flashcore/params.h"

namespace {

constexpr const char* kFn = "flashcore.forward: ";

void check_tensor(const at::Tensor& x, const char* name, const at::Tensor& q) {
  TORCH_CHECK(x.is_cuda(), kFn, name, " must be a CUDA tensor, got device ", x.device());
  TORCH_CHECK(x.device() == q.device(), kFn, name, " must be on the same device as q (", q.device(), "), got ",
              x.device());
  TORCH_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16, kFn, name,
              " must be float16 or bfloat16, got ", x.scalar_type());
  TORCH_CHECK(x.scalar_type() == q.scalar_type(), kFn, name, " must have the dtype of q (", q.scalar_type(),
              "), got ", x.scalar_type());
  TORCH_CHECK(x.dim() == 4, kFn, name, " must be 4-D [B, H, S, D], got ", x.dim(), "-D with shape ", x.sizes());
  TORCH_CHECK(x.stride(3) == 1, kFn, name, " must have a contiguous last dimension (stride 1), got stride ",
              x.stride(3));
}

// The kernels copy 16-byte chunks (8 halves): every row start must be 16-byte aligned.
bool aligned_16(const at::Tensor& x) {
  const auto addr = reinterpret_cast<uintptr_t>(x.data_ptr());
  return addr % 16 == 0 && x.stride(0) % 8 == 0 && x.stride(1) % 8 == 0 && x.stride(2) % 8 == 0;
}

at::Tensor as_aligned(const at::Tensor& x) { return aligned_16(x) ? x : x.contiguous().clone(); }

at::Tensor forward(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in, bool causal,
                   std::optional<at::Tensor> out) {
  TORCH_CHECK(q_in.is_cuda(), kFn, "q must be a CUDA tensor, got device ", q_in.device());
  check_tensor(q_in, "q", q_in);
  check_tensor(k_in, "k", q_in);
  check_tensor(v_in, "v", q_in);

  const int64_t B = q_in.size(0), H = q_in.size(1), S_q = q_in.size(2), D = q_in.size(3);
  const int64_t S_k = k_in.size(2);
  TORCH_CHECK(D == 64 || D == 128, kFn, "q head dim (size 3) must be 64 or 128, got ", D);
  TORCH_CHECK(k_in.size(3) == D, kFn, "k head dim (size 3) must equal q's (", D, "), got ", k_in.size(3));
  TORCH_CHECK(k_in.size(0) == B, kFn, "k batch size (size 0) must equal q's (", B, "), got ", k_in.size(0));
  TORCH_CHECK(k_in.size(1) == H, kFn, "k head count (size 1) must equal q's (", H, "), got ", k_in.size(1));
  TORCH_CHECK(v_in.sizes() == k_in.sizes(), kFn, "v shape must equal k's (", k_in.sizes(), "), got ",
              v_in.sizes());
  TORCH_CHECK(S_k >= 1, kFn, "k sequence length (size 2) must be at least 1, got ", S_k);
  TORCH_CHECK(B * H <= 65535, kFn, "q batch*heads must be at most 65535 (grid y), got ", B * H);
  TORCH_CHECK(S_q <= INT32_MAX && S_k <= INT32_MAX, kFn, "sequence lengths must fit in int32");

  at::Tensor o;
  if (out.has_value()) {
    o = *out;
    check_tensor(o, "out", q_in);
    TORCH_CHECK(o.sizes() == q_in.sizes(), kFn, "out shape must equal q's (", q_in.sizes(), "), got ", o.sizes());
    TORCH_CHECK(aligned_16(o), kFn, "out must be 16-byte aligned with strides that are multiples of 8");
  } else {
    o = at::empty_like(q_in, q_in.options().memory_format(at::MemoryFormat::Contiguous));
  }
  if (B == 0 || H == 0 || S_q == 0) return o;

  const c10::cuda::CUDAGuard guard(q_in.device());
  const at::Tensor q = as_aligned(q_in);
  const at::Tensor k = as_aligned(k_in);
  const at::Tensor v = as_aligned(v_in);

  FlashParams p{};
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  p.o = o.data_ptr();
  p.q_batch_stride = q.stride(0);
  p.q_head_stride = q.stride(1);
  p.q_row_stride = q.stride(2);
  p.k_batch_stride = k.stride(0);
  p.k_head_stride = k.stride(1);
  p.k_row_stride = k.stride(2);
  p.v_batch_stride = v.stride(0);
  p.v_head_stride = v.stride(1);
  p.v_row_stride = v.stride(2);
  p.o_batch_stride = o.stride(0);
  p.o_head_stride = o.stride(1);
  p.o_row_stride = o.stride(2);
  p.batch = static_cast<int>(B);
  p.heads = static_cast<int>(H);
  p.seqlen_q = static_cast<int>(S_q);
  p.seqlen_k = static_cast<int>(S_k);
  p.head_dim = static_cast<int>(D);
  p.softmax_scale = 1.0f / std::sqrt(static_cast<float>(D));
  p.causal = causal;
  p.dtype = q.scalar_type() == at::kBFloat16 ? FlashDtype::kBFloat16 : FlashDtype::kFloat16;

  const cudaError_t err = flashcore_forward(p, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, kFn, "kernel launch failed: ", cudaGetErrorString(err));
  return o;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "FlashCore attention forward (one kernel per build)";
  m.def("forward", &forward, "softmax(q kᵀ / sqrt(D)) v for [B, H, S, D] fp16/bf16 CUDA tensors", py::arg("q"),
        py::arg("k"), py::arg("v"), py::arg("causal") = false, py::arg("out") = py::none());
}
