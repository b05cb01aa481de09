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

// float8_e4m3fn: 8-bit wgmma reads both operands K-major, so P·V needs Vᵀ with the keys contiguous.
// Returns Vᵀ as [B, H, D, S_k rounded up to 16] (zero keys after S_k), the keys inside every 16 in
// the kernel's P-fragment order: position 4 t + 2 h + l holds key 2 t + 8 h + l (params.h). One
// copy of V on the current stream, part of the call.
at::Tensor e4m3_v_transposed(const at::Tensor& v) {
  const int64_t B = v.size(0), H = v.size(1), S = v.size(2), D = v.size(3);
  const int64_t S16 = (S + 15) / 16 * 16;
  at::Tensor bytes = v.view(at::kByte);  // e4m3 0.0 is byte 0: padding with zero bytes pads with zeros
  if (S16 != S) bytes = at::constant_pad_nd(bytes, {0, 0, 0, S16 - S}, 0);
  // [B][H][S16/16][h 2][t 4][l 2][D] -> [B][H][D][S16/16][t][h][l]
  return bytes.reshape({B, H, S16 / 16, 2, 4, 2, D})
      .permute({0, 1, 6, 2, 4, 3, 5})
      .contiguous()
      .view({B, H, D, S16})
      .view(at::kFloat8_e4m3fn);
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
  const bool e4m3 = q.scalar_type() == at::kFloat8_e4m3fn;
  const at::Tensor v = e4m3 ? e4m3_v_transposed(v_in) : as_aligned(v_in);

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
  p.vt_keys = e4m3 ? static_cast<int>(v.size(3)) : 0;

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
