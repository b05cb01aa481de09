// FlashCore: the one interface between a kernel and the torch binding.
//
// Plain C++ (no torch headers), as in Dao-AILab/flash-attention's Flash_fwd_params: the binding
// checks the arguments and fills this struct; every kernel .cu defines flashcore_forward(), so a
// kernel is built as (one .cu + extension/flashcore_binding.cpp).
#pragma once

#include <cstdint>
#include <cuda_runtime_api.h>

// kFloat8E4M3: q, k and v are float8_e4m3fn, o is bfloat16; only flashcore_wgmma takes it (the other
// kernels return cudaErrorNotSupported).
enum class FlashDtype : int { kFloat16 = 0, kBFloat16 = 1, kFloat8E4M3 = 2 };

struct FlashParams {
  // Tensors are [B, H, S, D] with D contiguous (stride 1); other strides are in elements.
  const void* q;
  const void* k;
  const void* v;
  void* o;

  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t v_batch_stride, v_head_stride, v_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;

  int batch;     // B
  int heads;     // H (same for q, k, v: no grouped-query attention)
  int seqlen_q;  // S_q >= 1
  int seqlen_k;  // S_k >= 1
  int head_dim;  // D, 64 or 128; q, k, v and o share it

  float softmax_scale;  // usually 1/sqrt(D)
  bool causal;          // top-left aligned, as torch SDPA's is_causal: query i sees keys j <= i
  FlashDtype dtype;     // q, k, v and o share it (but see kFloat8E4M3)

  // kFloat8E4M3 only: a contiguous [B, H, D, vt_keys] byte buffer (vt_keys = S_k rounded up to 16)
  // that the kernel fills with Vᵀ before it uses it: keys contiguous, zero keys after S_k, and inside
  // every 16 keys the order of the 8-bit wgmma A fragment (position 4 t + 2 h + l holds key
  // 2 t + 8 h + l). The binding allocates it; its contents on entry do not matter.
  void* vt;
  int vt_keys;
};

// Launches the kernel on `stream`; returns the launch error (cudaSuccess if it was queued).
// Preconditions (checked by the binding): pointers 16-byte aligned, strides multiples of 8.
cudaError_t flashcore_forward(const FlashParams& p, cudaStream_t stream);
