// FlashCore scalar baseline: one online-softmax pass per query row, FP32 accumulators, no tensor
// cores. It is the reference point the faster kernels are gated against, so it favours clarity.
//
// Work split: a block of 128 threads; each query row is shared by D/16 threads that hold
// interleaved 16-element slices of D (d = part + lanes_per_row*i), so their shared-memory reads of
// one key row touch distinct banks and the other rows of the warp read the same key row (a
// broadcast). 16 floats of q and 16 of the accumulator per thread keep D=128 free of spills.
// K and V are staged through shared memory as float, kTileN keys at a time.
#include "params.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashcore {

constexpr int kThreads = 128;
constexpr int kDPerLane = 16;
constexpr int kTileN = 32;                              // keys per shared-memory tile
constexpr float kLog2e = 1.4426950408889634f;

template <bool kBf16>
struct Elem;
template <>
struct Elem<false> {
  using T = __half;
  static __device__ __forceinline__ float load(const T* p) { return __half2float(*p); }
  static __device__ __forceinline__ void store(T* p, float x) { *p = __float2half_rn(x); }
};
template <>
struct Elem<true> {
  using T = __nv_bfloat16;
  static __device__ __forceinline__ float load(const T* p) { return __bfloat162float(*p); }
  static __device__ __forceinline__ void store(T* p, float x) { *p = __float2bfloat16_rn(x); }
};

template <int D, bool kBf16>
__global__ void __launch_bounds__(kThreads) flashcore_scalar_fwd_kernel(const FlashParams p) {
  using E = Elem<kBf16>;
  using T = typename E::T;
  constexpr int kLanesPerRow = D / kDPerLane;            // 4 or 8, a power of two
  constexpr int kRowsPerBlock = kThreads / kLanesPerRow;  // 32 or 16
  __shared__ float sK[kTileN][D];
  __shared__ float sV[kTileN][D];

  const int tid = threadIdx.x;
  const int part = tid % kLanesPerRow;
  const int row = blockIdx.x * kRowsPerBlock + tid / kLanesPerRow;
  const int b = blockIdx.y / p.heads;
  const int h = blockIdx.y % p.heads;
  const bool row_valid = row < p.seqlen_q;

  const T* q = static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + h * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + h * p.v_head_stride;
  T* o = static_cast<T*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;

  // Scores are kept in the log2 domain: exp(x*scale) == exp2(x*scale*log2(e)).
  const float scale_log2 = p.softmax_scale * kLog2e;
  float qr[kDPerLane];
  float acc[kDPerLane];
#pragma unroll
  for (int i = 0; i < kDPerLane; ++i) {
    qr[i] = row_valid ? E::load(q + row * p.q_row_stride + part + kLanesPerRow * i) * scale_log2 : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY;
  float l = 0.f;

  // Causal (top-left): the last row of this block sees keys up to its own index.
  const int n_end = p.causal ? min(p.seqlen_k, (blockIdx.x + 1) * kRowsPerBlock) : p.seqlen_k;
  for (int n0 = 0; n0 < n_end; n0 += kTileN) {
    __syncthreads();  // the previous tile is no longer read
    for (int i = tid; i < kTileN * D; i += kThreads) {
      const int r = i / D;
      const int c = i % D;
      const bool ok = n0 + r < p.seqlen_k;
      sK[r][c] = ok ? E::load(k + (n0 + r) * p.k_row_stride + c) : 0.f;
      sV[r][c] = ok ? E::load(v + (n0 + r) * p.v_row_stride + c) : 0.f;
    }
    __syncthreads();
    const int n_in_tile = min(kTileN, n_end - n0);  // uniform across the block
    for (int j = 0; j < n_in_tile; ++j) {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < kDPerLane; ++i) s = fmaf(qr[i], sK[j][part + kLanesPerRow * i], s);
#pragma unroll
      for (int off = 1; off < kLanesPerRow; off *= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
      const int key = n0 + j;
      if (!p.causal || key <= row) {
        const float m_new = fmaxf(m, s);
        const float corr = exp2f(m - m_new);  // 0 on the first key (m == -inf)
        const float pk = exp2f(s - m_new);
        l = l * corr + pk;
#pragma unroll
        for (int i = 0; i < kDPerLane; ++i) acc[i] = fmaf(pk, sV[j][part + kLanesPerRow * i], acc[i] * corr);
        m = m_new;
      }
    }
  }

  if (row_valid) {
    const float inv_l = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int i = 0; i < kDPerLane; ++i) E::store(o + row * p.o_row_stride + part + kLanesPerRow * i, acc[i] * inv_l);
  }
}

template <int D, bool kBf16>
cudaError_t launch(const FlashParams& p, cudaStream_t stream) {
  constexpr int kRowsPerBlock = kThreads / (D / kDPerLane);
  const dim3 grid((p.seqlen_q + kRowsPerBlock - 1) / kRowsPerBlock, p.batch * p.heads);
  flashcore_scalar_fwd_kernel<D, kBf16><<<grid, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace flashcore

cudaError_t flashcore_forward(const FlashParams& p, cudaStream_t stream) {
  if (p.dtype == FlashDtype::kFloat8E4M3) return cudaErrorNotSupported;  // flashcore_wgmma only
  const bool bf16 = p.dtype == FlashDtype::kBFloat16;
  if (p.head_dim == 64) return bf16 ? flashcore::launch<64, true>(p, stream) : flashcore::launch<64, false>(p, stream);
  if (p.head_dim == 128) return bf16 ? flashcore::launch<128, true>(p, stream) : flashcore::launch<128, false>(p, stream);
  return cudaErrorInvalidValue;
}
