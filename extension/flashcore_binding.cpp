// Torch binding shared by every FlashCore kernel: checks the arguments (each message names the
// argument), allocates the output, fills FlashParams and launches on the current stream. The
// kernel .cu it is linked with defines flashcore_forward() and includes no torch headers.
#include <torch/extension.h>  // first: the gate's precompiled header (docs/design.md)
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <initializer_list>
#include <optional>
#include <string>

#include "../kernels/flashcore/params.h"

namespace {

// Messages are built as one std::string with std::to_string and passed to TORCH_CHECK as a single
// argument: on the device image, streaming an integer through std::ostream inside the extension
// (c10::str(..., int64_t)) segfaulted in libstdc++ (cuda-gdb: ostream::_M_insert<long> ->
// codecvt::do_unshift), while a single string argument is passed through without a stream.
std::string msg(std::initializer_list<std::string> parts) {
  std::string out = "flashcore.forward: ";
  for (const auto& part : parts) out += part;
  return out;
}

std::string num(int64_t v) { return std::to_string(v); }

std::string shape(const at::Tensor& x) {
  std::string out = "[";
  for (int64_t i = 0; i < x.dim(); ++i) out += (i ? ", " : "") + std::to_string(x.size(i));
  return out + "]";
}

std::string dtype(const at::Tensor& x) { return c10::toString(x.scalar_type()); }

// float8_e4m3fn inputs give a bfloat16 output; 16-bit inputs an output of their own dtype.
at::ScalarType out_dtype(const at::Tensor& q) {
  return q.scalar_type() == at::kFloat8_e4m3fn ? at::kBFloat16 : q.scalar_type();
}

void check_tensor(const at::Tensor& x, const char* name, const at::Tensor& q, bool is_out = false) {
  TORCH_CHECK(x.is_cuda(), msg({name, " must be a CUDA tensor, got device ", x.device().str()}));
  TORCH_CHECK(x.device() == q.device(),
              msg({name, " must be on the same device as q (", q.device().str(), "), got ", x.device().str()}));
  TORCH_CHECK(x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16 ||
                  (!is_out && x.scalar_type() == at::kFloat8_e4m3fn),
              msg({name, " must be float16, bfloat16 or float8_e4m3fn, got ", dtype(x)}));
  if (is_out && q.scalar_type() == at::kFloat8_e4m3fn) {
    TORCH_CHECK(x.scalar_type() == out_dtype(q),
                msg({name, " must be ", c10::toString(out_dtype(q)), " for ", dtype(q), " inputs, got ", dtype(x)}));
  } else {
    TORCH_CHECK(x.scalar_type() == q.scalar_type(),
                msg({name, " must have the dtype of q (", dtype(q), "), got ", dtype(x)}));
  }
  TORCH_CHECK(x.dim() == 4, msg({name, " must be 4-D [B, H, S, D], got ", num(x.dim()), "-D with shape ", shape(x)}));
  TORCH_CHECK(x.stride(3) == 1,
              msg({name, " must have a contiguous last dimension (stride 1), got stride ", num(x.stride(3))}));
}

// The kernels copy 16-byte chunks: every row start must be 16-byte aligned.
bool aligned_16(const at::Tensor& x) {
  const auto addr = reinterpret_cast<uintptr_t>(x.data_ptr());
  const int64_t e = x.element_size();
  return addr % 16 == 0 && x.stride(0) * e % 16 == 0 && x.stride(1) * e % 16 == 0 && x.stride(2) * e % 16 == 0;
}

at::Tensor as_aligned(const at::Tensor& x) { return aligned_16(x) ? x : x.contiguous().clone(); }

at::Tensor forward(const at::Tensor& q_in, const at::Tensor& k_in, const at::Tensor& v_in, bool causal,
                   std::optional<at::Tensor> out) {
  TORCH_CHECK(q_in.is_cuda(), msg({"q must be a CUDA tensor, got device ", q_in.device().str()}));
  check_tensor(q_in, "q", q_in);
  check_tensor(k_in, "k", q_in);
  check_tensor(v_in, "v", q_in);

  const int64_t B = q_in.size(0), H = q_in.size(1), S_q = q_in.size(2), D = q_in.size(3);
  const int64_t S_k = k_in.size(2);
  TORCH_CHECK(D == 64 || D == 128, msg({"q head dim (size 3) must be 64 or 128, got ", num(D)}));
  TORCH_CHECK(k_in.size(3) == D, msg({"k head dim (size 3) must equal q's (", num(D), "), got ", num(k_in.size(3))}));
  TORCH_CHECK(k_in.size(0) == B, msg({"k batch size (size 0) must equal q's (", num(B), "), got ", num(k_in.size(0))}));
  TORCH_CHECK(k_in.size(1) == H, msg({"k head count (size 1) must equal q's (", num(H), "), got ", num(k_in.size(1))}));
  TORCH_CHECK(v_in.sizes() == k_in.sizes(), msg({"v shape must equal k's (", shape(k_in), "), got ", shape(v_in)}));
  TORCH_CHECK(S_k >= 1, msg({"k sequence length (size 2) must be at least 1, got ", num(S_k)}));
  TORCH_CHECK(B * H <= 65535, msg({"q batch*heads must be at most 65535 (grid y), got ", num(B * H)}));
  TORCH_CHECK(S_q <= INT32_MAX && S_k <= INT32_MAX, msg({"q and k sequence lengths must fit in int32"}));

  at::Tensor o;
  if (out.has_value()) {
    o = *out;
    check_tensor(o, "out", q_in, /*is_out=*/true);
    TORCH_CHECK(o.sizes() == q_in.sizes(), msg({"out shape must equal q's (", shape(q_in), "), got ", shape(o)}));
    TORCH_CHECK(aligned_16(o), msg({"out must be 16-byte aligned with strides that are multiples of 8"}));
  } else {
    o = at::empty(q_in.sizes(), q_in.options().dtype(out_dtype(q_in)).memory_format(at::MemoryFormat::Contiguous));
  }
  if (B == 0 || H == 0 || S_q == 0) return o;

  const c10::cuda::CUDAGuard guard(q_in.device());
  const at::Tensor q = as_aligned(q_in);
  const at::Tensor k = as_aligned(k_in);
  const at::Tensor v = as_aligned(v_in);
  // float8_e4m3fn: the kernel writes Vᵀ here first (8-bit wgmma reads P·V's B only K-major, params.h).
  const bool e4m3 = q.scalar_type() == at::kFloat8_e4m3fn;
  const int64_t vt_keys = (S_k + 15) / 16 * 16;
  const at::Tensor vt = e4m3 ? at::empty({B, H, D, vt_keys}, q.options().dtype(at::kByte)) : at::Tensor();

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
  p.dtype = e4m3 ? FlashDtype::kFloat8E4M3
                 : q.scalar_type() == at::kBFloat16 ? FlashDtype::kBFloat16 : FlashDtype::kFloat16;
  p.vt = e4m3 ? vt.data_ptr() : nullptr;
  p.vt_keys = e4m3 ? static_cast<int>(vt_keys) : 0;

  const cudaError_t err = flashcore_forward(p, at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err != cudaErrorNotSupported, msg({"this kernel does not take ", dtype(q), " inputs (flashcore_wgmma does)"}));
  TORCH_CHECK(err == cudaSuccess, msg({"kernel launch failed: ", cudaGetErrorString(err)}));
  return o;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "FlashCore attention forward (one kernel per build)";
  m.def("forward", &forward,
        "softmax(q kᵀ / sqrt(D)) v for [B, H, S, D] fp16/bf16 CUDA tensors (float8_e4m3fn: bf16 out)", py::arg("q"),
        py::arg("k"), py::arg("v"), py::arg("causal") = false, py::arg("out") = py::none());
}
