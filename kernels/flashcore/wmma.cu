// FlashCore tensor-core forward kernel, FlashAttention-2 style (Dao, "FlashAttention-2", 2023):
// mma.sync.m16n8k16 for both S = Q Kᵀ and O += P V, FP32 accumulators, online softmax.
//
// One block owns kBlockM = kWarpsM * 16 * kMAtoms query rows of one (batch, head); each warp owns
// 16 * kMAtoms of them, so the softmax row statistics never leave the warp. With kSplits > 1 the
// block has kSplits groups of kWarpsM warps that take key tiles round-robin over the same rows
// (split-KV inside the block, for grids too small to fill the GPU); group 0 merges the partial
// (max, sum, O) of the others through shared memory at the end. Per key tile (kBlockN = 64 keys):
//   - Q fragments stay in registers for the whole block (loaded once with ldmatrix);
//   - K/V tiles are double-buffered in shared memory with cp.async (tile t+1 loads while t is used);
//   - S accumulators are rescaled, exponentiated and repacked in place as the A operand of P·V
//     (the m16n8k16 C layout of two adjacent n-tiles is exactly the A layout of one k-step);
//   - the running output is rescaled by exp(m_old - m_new) (online softmax).
// Shared-memory rows are padded by kSmemPad halves so the 8 row addresses of each ldmatrix phase
// fall in distinct banks (row pitch 144 B or 272 B instead of 128 B or 256 B).
// Needs sm_80 or newer (cp.async, ldmatrix, bf16 mma).
#include "params.h"
#include "config_override.h"
#include "sm_count.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace flashcore {

constexpr int kSmemPad = 8;  // halves of padding per smem row

constexpr int kBlockN = 64;  // keys per K/V tile
constexpr float kLog2e = 1.4426950408889634f;

// ---- PTX wrappers (PTX ISA: "Warp-level matrix instructions", "cp.async") ----

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global->shared copy; src_bytes == 0 zero-fills the destination (used for tails).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// C += A·B with A 16x16 (row), B 16x8 (col), f32 accumulators.
template <bool kBf16>
__device__ __forceinline__ void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats -> one 32-bit register of two halves, `lo` in the low half (lower column index).
template <bool kBf16>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (kBf16) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}

template <int D, int kWarpsM, int kMAtoms, int kSplits>
struct Tile {
  static constexpr int kGroupThreads = kWarpsM * 32;  // one split group
  static constexpr int kThreads = kGroupThreads * kSplits;
  static constexpr int kRowsPerWarp = 16 * kMAtoms;
  static constexpr int kBlockM = kWarpsM * kRowsPerWarp;
  static constexpr int kStride = D + kSmemPad;  // halves per shared-memory row
  static constexpr int kQElems = kBlockM * kStride;
  static constexpr int kKVElems = kBlockN * kStride;
  // Q tile (reused to stage the output) + per split group 2 K buffers + 2 V buffers.
  static constexpr int kSmemBytes = (kQElems + kSplits * 4 * kKVElems) * 2;
  // Split-KV merge: per thread of groups 1..kSplits-1, its O accumulators, row max and row sum.
  static constexpr int kMergeFloats = kMAtoms * (D / 8) * 4 + 4 * kMAtoms;
  static_assert(kSplits == 1 || (kSplits - 1) * kGroupThreads * kMergeFloats * 4 <= kSplits * 4 * kKVElems * 2,
                "merge scratch must fit in the K/V buffers");
};

// Copies rows [row0, row0+rows) of a [*, D] tile (row pitch `stride` elements) to shared memory,
// zero-filling rows at or past `nrows`.
template <int D, int kThreads>
__device__ __forceinline__ void load_tile(uint16_t* dst, const uint16_t* src, int64_t stride, int row0, int rows,
                                          int nrows, int tid) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kStride = D + kSmemPad;
  for (int i = tid; i < rows * kChunks; i += kThreads) {
    const int r = i / kChunks;
    const int c = i % kChunks;
    const bool valid = row0 + r < nrows;
    const uint16_t* g = valid ? src + (row0 + r) * stride + c * 8 : src;
    cp_async_16(smem_addr(dst + r * kStride + c * 8), g, valid);
  }
}

template <int D, int kWarpsM, int kMAtoms, int kSplits, bool kBf16>
// min-blocks 1: lets ptxas use up to 255 registers (with none, it capped 8-warp blocks at 128 and spilled).
__global__ void __launch_bounds__(kWarpsM * kSplits * 32, 1) flashcore_mma_fwd_kernel(const FlashParams p) {
  using Cfg = Tile<D, kWarpsM, kMAtoms, kSplits>;
  constexpr int kThreads = Cfg::kThreads;
  constexpr int kGroupThreads = Cfg::kGroupThreads;
  constexpr int kRowsPerWarp = Cfg::kRowsPerWarp;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kStride = Cfg::kStride;
  constexpr int kNTiles = kBlockN / 8;  // n8 tiles of S per m-atom
  constexpr int kDTiles = D / 8;        // n8 tiles of O per m-atom

  extern __shared__ __align__(16) uint16_t smem[];
  uint16_t* sQ = smem;
  const int tid = threadIdx.x;
  const int split = tid / kGroupThreads;       // which split group (key tiles split, t % kSplits)
  const int gtid = tid % kGroupThreads;        // thread index inside the group
  const int warp = gtid / 32;                  // warp index inside the group: owns the same rows in every group
  const int lane = tid % 32;
  uint16_t* sK = sQ + Cfg::kQElems + split * 4 * Cfg::kKVElems;  // [2][kBlockN][kStride] of this group
  uint16_t* sV = sK + 2 * Cfg::kKVElems;                           // [2][kBlockN][kStride] of this group
  // Heaviest causal tiles (largest m) first, so the tail of the grid is short work.
  const int m_block = gridDim.x - 1 - blockIdx.x;
  const int b = blockIdx.y / p.heads;
  const int h = blockIdx.y % p.heads;
  const int m0 = m_block * kBlockM;

  const uint16_t* q = static_cast<const uint16_t*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + b * p.k_batch_stride + h * p.k_head_stride;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + b * p.v_batch_stride + h * p.v_head_stride;
  uint16_t* o = static_cast<uint16_t*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;

  // Causal (top-left): rows of this block see keys < m0 + kBlockM; later tiles are skipped whole.
  const int n_end = p.causal ? min(p.seqlen_k, m0 + kBlockM) : p.seqlen_k;
  const int n_tiles = (n_end + kBlockN - 1) / kBlockN;
  // Every group runs the same number of iterations so that all threads meet every __syncthreads;
  // group `split` handles tile it*kSplits + split, if it exists.
  const int n_iters = (n_tiles + kSplits - 1) / kSplits;

  load_tile<D, kThreads>(sQ, q, p.q_row_stride, m0, kBlockM, p.seqlen_q, tid);
  if (split < n_tiles) {
    load_tile<D, kGroupThreads>(sK, k, p.k_row_stride, split * kBlockN, kBlockN, p.seqlen_k, gtid);
    load_tile<D, kGroupThreads>(sV, v, p.v_row_stride, split * kBlockN, kBlockN, p.seqlen_k, gtid);
  }
  cp_async_commit();

  const float scale_log2 = p.softmax_scale * kLog2e;
  const int warp_row0 = m0 + warp * kRowsPerWarp;  // first query row of this warp
  // Fragment coordinates (PTX ISA, mma.m16n8k16 fragment layouts): this thread holds rows g and
  // g+8 of each m-atom, columns 2t and 2t+1 of each n8 tile.
  const int g = lane / 4;
  const int t4 = lane % 4;

  uint32_t qf[kMAtoms][D / 16][4];
  float acc_o[kMAtoms][kDTiles][4];
  float row_max[kMAtoms][2];
  float row_sum[kMAtoms][2];  // per-thread partial sums; reduced across the quad at the end
#pragma unroll
  for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
    for (int j = 0; j < kDTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mi][j][e] = 0.f;
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[mi][r] = -INFINITY;
      row_sum[mi][r] = 0.f;
    }
  }

  for (int it = 0; it < n_iters; ++it) {
    const int buf = it & 1;
    const int t = it * kSplits + split;  // this group's key tile
    if (t + kSplits < n_tiles) {
      const int next = (t + kSplits) * kBlockN;
      load_tile<D, kGroupThreads>(sK + (buf ^ 1) * Cfg::kKVElems, k, p.k_row_stride, next, kBlockN, p.seqlen_k, gtid);
      load_tile<D, kGroupThreads>(sV + (buf ^ 1) * Cfg::kKVElems, v, p.v_row_stride, next, kBlockN, p.seqlen_k, gtid);
      cp_async_commit();
      cp_async_wait<1>();  // everything but the tile just issued has landed
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    if (it == 0) {
#pragma unroll
      for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          const int r = warp * kRowsPerWarp + mi * 16 + (lane & 15);
          const int c = kk * 16 + (lane >> 4) * 8;
          ldsm_x4(qf[mi][kk], smem_addr(sQ + r * kStride + c));
        }
      }
    }

    const int n0 = t * kBlockN;
    // Causal: a warp whose last row precedes this tile's first key has nothing to add.
    const bool warp_active = t < n_tiles && !(p.causal && n0 > warp_row0 + kRowsPerWarp - 1);
    if (warp_active) {
      const uint16_t* sKb = sK + buf * Cfg::kKVElems;
      const uint16_t* sVb = sV + buf * Cfg::kKVElems;

      // S = Q Kᵀ. One ldmatrix.x4 gives the B fragments of two n8 tiles for one k16 step:
      // matrices (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7), (keys 8-15, d 8-15).
      float s[kMAtoms][kNTiles][4];
#pragma unroll
      for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
        for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mi][j][e] = 0.f;
        }
      }
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int nn = 0; nn < kBlockN / 16; ++nn) {
          uint32_t bk[4];
          const int r = nn * 16 + (lane & 7) + ((lane >> 4) << 3);
          const int c = kk * 16 + ((lane >> 3) & 1) * 8;
          ldsm_x4(bk, smem_addr(sKb + r * kStride + c));
#pragma unroll
          for (int mi = 0; mi < kMAtoms; ++mi) {
            mma_16816<kBf16>(s[mi][2 * nn], qf[mi][kk], bk[0], bk[1]);
            mma_16816<kBf16>(s[mi][2 * nn + 1], qf[mi][kk], bk[2], bk[3]);
          }
        }
      }

      // Mask key columns past S_k and, when causal, above the diagonal (only tiles that need it).
      const bool need_mask = (n0 + kBlockN > p.seqlen_k) || (p.causal && n0 + kBlockN - 1 > warp_row0);
      if (need_mask) {
#pragma unroll
        for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
          for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int col = n0 + j * 8 + 2 * t4 + (e & 1);
              const int row = warp_row0 + mi * 16 + g + (e >> 1) * 8;
              if (col >= p.seqlen_k || (p.causal && col > row)) s[mi][j][e] = -INFINITY;
            }
          }
        }
      }

      // Online softmax, in the log2 domain: exp(x*scale) == exp2(x*scale*log2(e)).
#pragma unroll
      for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float mx = row_max[mi][r];
#pragma unroll
          for (int j = 0; j < kNTiles; ++j) mx = fmaxf(mx, fmaxf(s[mi][j][2 * r], s[mi][j][2 * r + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          // A row with every key masked so far keeps max -inf; use 0 so exp2 gives 0, not NaN.
          const float mx_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
          const float corr = exp2f(row_max[mi][r] * scale_log2 - mx_scaled);
          row_max[mi][r] = mx;
          float sum = 0.f;
#pragma unroll
          for (int j = 0; j < kNTiles; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float pe = exp2f(fmaf(s[mi][j][2 * r + e], scale_log2, -mx_scaled));
              s[mi][j][2 * r + e] = pe;
              sum += pe;
            }
          }
          row_sum[mi][r] = row_sum[mi][r] * corr + sum;
#pragma unroll
          for (int j = 0; j < kDTiles; ++j) {
            acc_o[mi][j][2 * r] *= corr;
            acc_o[mi][j][2 * r + 1] *= corr;
          }
        }
      }

      // ==== FLASHCORE EXTRA-WORK SPOT (docs/kernels.md) =========================================
      // Intentionally empty. Runs once per (warp, key tile) between the softmax and P·V; the gate's
      // demo inserts redundant work here to make a slower revision.
      // ==== END EXTRA-WORK SPOT ==================================================================

      // O += P V. P (the S accumulators, now probabilities) is repacked as A fragments; V is read
      // with ldmatrix.trans: matrices (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15),
      // (keys 8-15, d 8-15) give the B fragments of two n8 tiles of d for one k16 step of keys.
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk) {
        uint32_t pa[kMAtoms][4];
#pragma unroll
        for (int mi = 0; mi < kMAtoms; ++mi) {
          pa[mi][0] = pack2<kBf16>(s[mi][2 * kk][0], s[mi][2 * kk][1]);
          pa[mi][1] = pack2<kBf16>(s[mi][2 * kk][2], s[mi][2 * kk][3]);
          pa[mi][2] = pack2<kBf16>(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
          pa[mi][3] = pack2<kBf16>(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dd = 0; dd < D / 16; ++dd) {
          uint32_t bv[4];
          const int r = kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
          const int c = dd * 16 + (lane >> 4) * 8;
          ldsm_x4_trans(bv, smem_addr(sVb + r * kStride + c));
#pragma unroll
          for (int mi = 0; mi < kMAtoms; ++mi) {
            mma_16816<kBf16>(acc_o[mi][2 * dd], pa[mi], bv[0], bv[1]);
            mma_16816<kBf16>(acc_o[mi][2 * dd + 1], pa[mi], bv[2], bv[3]);
          }
        }
      }
    }
    __syncthreads();  // buffer `buf` is refilled by the next iteration's prefetch
  }

  if constexpr (kSplits > 1) {
    // Split-KV merge (FlashAttention-2 "split-KV" / flash-decoding rule): with m = max over splits,
    // O = sum_s O_s * exp(m_s - m) and l = sum_s l_s * exp(m_s - m). The K/V buffers are free now
    // (the loop ended on a barrier); layout [value][thread] keeps the accesses conflict-free.
    float* scratch = reinterpret_cast<float*>(smem + Cfg::kQElems);
    constexpr int kPerGroup = Cfg::kMergeFloats * kGroupThreads;
    if (split > 0) {
      float* dst = scratch + (split - 1) * kPerGroup + gtid;
      int i = 0;
#pragma unroll
      for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          dst[(i++) * kGroupThreads] = row_max[mi][r];
          dst[(i++) * kGroupThreads] = row_sum[mi][r];
        }
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) dst[(i++) * kGroupThreads] = acc_o[mi][j][e];
        }
      }
    }
    __syncthreads();
    if (split > 0) return;  // no barrier follows: group 0 finishes alone
#pragma unroll
    for (int s = 1; s < kSplits; ++s) {
      const float* src = scratch + (s - 1) * kPerGroup + gtid;
      int i = 0;
#pragma unroll
      for (int mi = 0; mi < kMAtoms; ++mi) {
        float c_self[2], c_other[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float m_other = src[(i++) * kGroupThreads];
          const float l_other = src[(i++) * kGroupThreads];
          const float m_new = fmaxf(row_max[mi][r], m_other);
          const float m_scaled = m_new == -INFINITY ? 0.f : m_new * scale_log2;
          c_self[r] = exp2f(row_max[mi][r] * scale_log2 - m_scaled);
          c_other[r] = exp2f(m_other * scale_log2 - m_scaled);
          row_max[mi][r] = m_new;
          row_sum[mi][r] = row_sum[mi][r] * c_self[r] + l_other * c_other[r];
        }
#pragma unroll
        for (int j = 0; j < kDTiles; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            acc_o[mi][j][e] = acc_o[mi][j][e] * c_self[e >> 1] + src[(i++) * kGroupThreads] * c_other[e >> 1];
          }
        }
      }
    }
  }

  // Epilogue: O / rowsum, staged through this warp's own rows of sQ (only this warp read them) so
  // the global stores are 16-byte and coalesced.
#pragma unroll
  for (int mi = 0; mi < kMAtoms; ++mi) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mi][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int row = warp * kRowsPerWarp + mi * 16 + g + r * 8;
#pragma unroll
      for (int j = 0; j < kDTiles; ++j) {
        const uint32_t packed = pack2<kBf16>(acc_o[mi][j][2 * r] * inv, acc_o[mi][j][2 * r + 1] * inv);
        *reinterpret_cast<uint32_t*>(sQ + row * kStride + j * 8 + 2 * t4) = packed;
      }
    }
  }
  __syncwarp();
  constexpr int kChunks = D / 8;
#pragma unroll
  for (int i = lane; i < kRowsPerWarp * kChunks; i += 32) {
    const int r = i / kChunks;
    const int c = i % kChunks;
    const int grow = warp_row0 + r;
    if (grow < p.seqlen_q) {
      *reinterpret_cast<uint4*>(o + grow * p.o_row_stride + c * 8) =
          *reinterpret_cast<const uint4*>(sQ + (warp * kRowsPerWarp + r) * kStride + c * 8);
    }
  }
}

template <int D, int kWarpsM, int kMAtoms, int kSplits, bool kBf16>
cudaError_t launch(const FlashParams& p, cudaStream_t stream) {
  using Cfg = Tile<D, kWarpsM, kMAtoms, kSplits>;
  auto kernel = flashcore_mma_fwd_kernel<D, kWarpsM, kMAtoms, kSplits, kBf16>;
  // Over 48 KB of dynamic shared memory needs an explicit opt-in (CUDA C++ Programming Guide,
  // "Shared Memory", compute capability 8.x/9.0).
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::kSmemBytes);
  if (err != cudaSuccess) return err;
  const dim3 grid((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM, p.batch * p.heads);
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
  return cudaGetLastError();
}

// Tile configurations, named w<warps per group>m<m-atoms per warp>[s<split groups>]:
// block = warps*16*m_atoms query rows, warps*splits warps.
enum class Config { kW4M1, kW4M2, kW8M1, kW4M1S2, kW2M1S4 };

template <int D, bool kBf16>
cudaError_t launch_config(Config c, const FlashParams& p, cudaStream_t stream) {
  switch (c) {
    case Config::kW4M1: return launch<D, 4, 1, 1, kBf16>(p, stream);
    // Two m-atoms per warp need 64 more accumulator registers: spills at D=128, so D=64 only.
    case Config::kW4M2: return D == 64 ? launch<64, 4, 2, 1, kBf16>(p, stream) : launch<D, 8, 1, 1, kBf16>(p, stream);
    case Config::kW8M1: return launch<D, 8, 1, 1, kBf16>(p, stream);
    case Config::kW4M1S2: return launch<D, 4, 1, 2, kBf16>(p, stream);
    // Four groups of double-buffered 128-wide K/V tiles would need 278 KB of smem: D=64 only.
    case Config::kW2M1S4: return D == 64 ? launch<64, 2, 1, 4, kBf16>(p, stream) : launch<D, 4, 1, 2, kBf16>(p, stream);
  }
  return cudaErrorInvalidValue;
}

// Per-shape choice, from the H200 sweep in docs/kernels.md: long sequences run best with 128-row
// blocks (D=64: 4 warps x 2 m-atoms, 252 registers; D=128: 8 warps x 1); grids of 64-row blocks
// that cannot fill the SMs (B1 H8 S512: 64 blocks for 132 SMs) split the keys inside the block
// (D=64: 32-row blocks of 4 groups x 2 warps, 8.5 us there against 9.4 us for 64 rows x 2 groups).
Config per_shape_config(const FlashParams& p) {
  const long long bh = static_cast<long long>(p.batch) * p.heads;
  const long long sms = sm_count();
  auto blocks = [&](int rows) { return bh * ((p.seqlen_q + rows - 1) / rows); };
  if (blocks(64) < sms) return p.head_dim == 64 ? Config::kW2M1S4 : Config::kW4M1S2;
  if (blocks(128) >= 2 * sms) return p.head_dim == 64 ? Config::kW4M2 : Config::kW8M1;
  return Config::kW4M1;
}

Config choose_config(const FlashParams& p) {
  // Tuning override for benchmarks (config_override.h).
  static constexpr ConfigName<Config> kNames[] = {
      {"w4m1", Config::kW4M1}, {"w4m2", Config::kW4M2}, {"w8m1", Config::kW8M1},
      {"w4m1s2", Config::kW4M1S2}, {"w2m1s4", Config::kW2M1S4}};
  return config_override("FLASHCORE_WMMA_CONFIG", kNames, per_shape_config(p));
}

}  // namespace flashcore

cudaError_t flashcore_forward(const FlashParams& p, cudaStream_t stream) {
  using namespace flashcore;
  const Config c = choose_config(p);
  if (p.dtype == FlashDtype::kFloat8E4M3) return cudaErrorNotSupported;  // flashcore_wgmma only
  const bool bf16 = p.dtype == FlashDtype::kBFloat16;
  if (p.head_dim == 64) return bf16 ? launch_config<64, true>(c, p, stream) : launch_config<64, false>(c, p, stream);
  if (p.head_dim == 128) return bf16 ? launch_config<128, true>(c, p, stream) : launch_config<128, false>(c, p, stream);
  return cudaErrorInvalidValue;
}
