// FlashCore Hopper forward kernel, FlashAttention-3 style (Shah et al., "FlashAttention-3", 2024):
// wgmma.mma_async for S = Q Kᵀ and O += P V, TMA loads completing on mbarriers, a producer warpgroup
// and one to three consumer warpgroups (warp specialisation, setmaxnreg), FP32 accumulators, online
// softmax.
//
// Block: kBlockM = 64 x consumers query rows of one (batch, head) at a time (the tile configs at the end
// of this file; the launcher's usual choice is two consumers, 384 threads, or three taking turns at
// D=64, 512 threads). Where
// there are more output tiles than SMs, the blocks are persistent: one per SM walks a list of tiles
// (TileSchedule, tile_schedule.h), and the producer loads the next tile's Q, K and V while the
// consumers finish the last one and store its output from a staging tile of its own.
//   - Warpgroup 0, producer: drops to 24 registers; one thread issues cp.async.bulk.tensor (TMA)
//     loads of the Q tile once and of K and V tiles (kBlockN = 128 keys) into a kStages-deep ring,
//     each stage guarded by a "full" mbarrier (TMA completes its transaction bytes) and an "empty"
//     mbarrier (every consumer thread arrives when it no longer reads the stage). K and V have their
//     own barriers, so S = Q Kᵀ of a tile can start before its V has landed.
//   - Warpgroups 1.., consumers: raise to 240 registers (160 with three); each owns 64 query rows (one
//     wgmma m64 row block), so row statistics stay inside the warp (quad shuffles only).
// Shared-memory tiles are stored as TMA writes them with 128-byte swizzle: [D/64][rows][64 halves],
// 128 B per row, 1024 B swizzle atoms; the wgmma descriptors read them in place: Q and K K-major
// (k16 steps advance the start address by 32 B inside the atom), V MN-major (transpose-B).
// Software pipeline in each consumer (FA3 "intra-warpgroup overlap"): S_{t+1} = Q K_{t+1}ᵀ and then
// O += P_t V_t are issued back to back; the softmax of S_{t+1} runs while P_t V_t is still on the
// tensor cores, and only the rescale of O and the repack of P wait for it.
// P stays in registers: the f32 accumulator layout of S, packed to half2, is the register-A
// fragment layout of the next wgmma. Tails: TMA zero-fills rows past S_q / S_k (the tensor map is
// 4-D [B][H][S][D], so a box never reads the next head), scores past S_k are masked to −inf, and
// the output is written by a TMA store that clips rows past S_q.
// Needs sm_90a (wgmma, setmaxnreg): build with -gencode=arch=compute_90a,code=sm_90a.
#include "params.h"
#include "config_override.h"
#include "sm_count.h"
#include "tile_schedule.h"
#include "wgmma_ptx.h"

#include <cuda.h>  // CUtensorMap and its enums (header only: the encoder is fetched at run time)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashcore {

constexpr float kLog2e = 1.4426950408889634f;

// A tile configuration: kConsumers warpgroups of 64 query rows each (kBlockM rows per block) and
// kBlockN keys per K/V tile; kFp8: e4m3 inputs (the output stays 16-bit, bf16).
template <int D_, int kConsumers_, int kBlockN_, bool kPingpong_ = false, bool kFp8_ = false>
struct Cfg {
  static constexpr int D = D_;
  static constexpr int kConsumers = kConsumers_;
  static constexpr int kBlockN = kBlockN_;
  // FP8 (e4m3) inputs: Q Kᵀ and P V run as k32 wgmmas with both operands K-major, so V arrives
  // transposed (Vᵀ, [D][keys], from the binding) and P is packed to e4m3 in registers.
  static constexpr bool kFp8 = kFp8_;
  static_assert(!kFp8 || kBlockN == 128, "e4m3: a Vᵀ tile row is kBlockN bytes, one 128-byte swizzle row");
  // Ping-pong (FA3 "inter-warpgroup overlap"): the consumers take turns, in round robin, to issue
  // their wgmmas, so one warpgroup's softmax runs while another's matrix work occupies the tensor cores.
  static constexpr bool kPingpong = kPingpong_;
  static_assert(!kPingpong || kConsumers >= 2, "ping-pong needs two or three consumer warpgroups");
  static constexpr int kBlockM = 64 * kConsumers;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  // setmaxnreg budgets: 128 x producer + kThreads-128 x consumer <= 65536 registers per SM.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = kConsumers == 3 ? 160 : 240;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "register file");
  // K/V ring depth: tiles loaded or in flight while the consumers still read the oldest: 3 where a
  // key row is 128 bytes or less (D=64, or e4m3), else 2. The gate's demo sets it to 1 on this line to
  // make a slower revision (docs/kernels.md, the wgmma demo hook).
  static constexpr int kStages = D * (kFp8 ? 1 : 2) <= 128 ? 3 : 2;
  static constexpr int kInBytes = kFp8 ? 1 : 2;  // bytes per input element
  // Q and K (and 16-bit V) are stored in column chunks one swizzled row wide: 128 B (64 halves, or
  // 128 e4m3 at D=128), or 64 B for e4m3 at D=64 (64-byte swizzle).
  static constexpr int kRowBytes = D * kInBytes < 128 ? D * kInBytes : 128;
  static constexpr int kChunkElems = kRowBytes / kInBytes;
  static constexpr int kChunks = D / kChunkElems;
  static constexpr int kQBytes = kBlockM * D * kInBytes;
  static constexpr int kKVBytes = kBlockN * D * kInBytes;
  static constexpr int kOChunks = D / 64;           // the output: 16-bit, 64-column (128 B) chunks
  static constexpr int kOBytes = kBlockM * D * 2;  // the output tile, staged for its TMA store
  // +1024: the dynamic shared-memory base is aligned up to the 1024 B swizzle atom by hand.
  static constexpr int kSmemBytes = 1024 + kQBytes + 2 * kStages * kKVBytes + kOBytes;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
  // Persistent blocks (FA3's tile scheduler): one block per SM walks a list of output tiles, so the
  // next tile's Q, K and V load while this one finishes and stores its output, instead of every
  // block starting by waiting for its first loads. The gate's demo sets it to false on this line for
  // the first Hopper revision (docs/kernels.md, the wgmma demo hooks).
  static constexpr bool kPersistent = true;
  // Causal tiles start early, so the short remainder tile of a head holds its first rows and sees few keys
  // (TileSchedule, `lead`). The gate's demo sets it to false on this line for the revisions before it
  // (docs/kernels.md, the wgmma demo hooks).
  static constexpr bool kCausalLead = true;
};

// Tensor maps of one launch, passed by value as a __grid_constant__ parameter (TMA reads them there).
struct TmaMaps {
  CUtensorMap q, k, v, o;
};

template <class C, bool kBf16>
struct Consumer {
  static constexpr int D = C::D;
  static constexpr int kBlockN = C::kBlockN;
  static constexpr int kBlockM = C::kBlockM;
  static constexpr int kSRegs = kBlockN / 2;  // S accumulators per thread (m64 x kBlockN / 128 threads)
  static constexpr int kORegs = D / 2;

  // Keys per wgmma k-step: 16 halves or 32 e4m3, 32 B of a swizzled row either way.
  static constexpr int kK = C::kFp8 ? 32 : 16;
  static constexpr int kStepsPerRow = C::kRowBytes / 32;

  float s[kSRegs];
  float o[kORegs];
  // P in the A-fragment layout of P V: pf[4 kk + i] is register i of k-step kk (two halves or four e4m3).
  uint32_t pf[kBlockN / kK * 4];
  float row_max[2];
  float row_sum[2];  // per-thread partial sums; reduced across the quad at the end

  // S = Q K_tᵀ for this warpgroup's 64 rows (asynchronous: committed, not waited).
  __device__ __forceinline__ void issue_qk(uint32_t q_base, uint32_t k_base) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / kK; ++kk) {
      constexpr int kRow = C::kRowBytes;
      const uint32_t off = (kk % kStepsPerRow) * 32;  // one k-step = 32 B inside the swizzled row
      const int chunk = kk / kStepsPerRow;
      const uint64_t a = smem_desc(q_base + chunk * kBlockM * kRow + off, 16, 8 * kRow, kRow);
      const uint64_t b = smem_desc(k_base + chunk * kBlockN * kRow + off, 16, 8 * kRow, kRow);
      if constexpr (C::kFp8) {
        Wgmma8<kBlockN>::ss(s, a, b, kk > 0);
      } else {
        Wgmma<kBlockN>::template ss<kBf16, 0>(s, a, b, kk > 0);
      }
    }
    wgmma_commit();
  }

  // O += P V_t (asynchronous). 16-bit: V is [keys][D] with D contiguous, the MN-major B operand.
  // e4m3: Vᵀ is [D][keys], one 128 B swizzled row of keys per d: K-major, like K in Q Kᵀ.
  __device__ __forceinline__ void issue_pv(uint32_t v_base) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / kK; ++kk) {
      const uint32_t a[4] = {pf[4 * kk], pf[4 * kk + 1], pf[4 * kk + 2], pf[4 * kk + 3]};
      if constexpr (C::kFp8) {
        Wgmma8<D>::rs(o, a, smem_desc(v_base + kk * 32, 16, 1024), 1);
      } else {
        Wgmma<D>::template rs<kBf16, 1>(o, a, smem_desc(v_base + kk * 16 * 128, kBlockN * 128, 1024), 1);
      }
    }
    wgmma_commit();
  }

  // Masks S of key tile n0 (keys past S_k; above the diagonal when causal) and turns it into
  // probabilities against the updated running max; returns the factors that rescale O and l.
  __device__ __forceinline__ void softmax(const FlashParams& p, int n0, int row0, int t4, float scale_log2,
                                          float (&corr)[2]) {
    const bool need_mask = n0 + kBlockN > p.seqlen_k || (p.causal && n0 + kBlockN - 1 > row0 - (row0 % 64));
    if (need_mask) {
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = n0 + j * 8 + 2 * t4 + (e & 1);
          const int row = row0 + (e >> 1) * 8;
          if (col >= p.seqlen_k || (p.causal && col > row)) s[4 * j + e] = -INFINITY;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = row_max[r];
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // A row with every key masked so far keeps max -inf; use 0 so exp2 gives 0, not NaN.
      const float mx_scaled = mx == -INFINITY ? 0.f : mx * scale_log2;
      corr[r] = exp2_ftz(row_max[r] * scale_log2 - mx_scaled);
      row_max[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pe = exp2_ftz(fmaf(s[4 * j + 2 * r + e], scale_log2, -mx_scaled));
          s[4 * j + 2 * r + e] = pe;
          sum += pe;
        }
      }
      row_sum[r] = row_sum[r] * corr[r] + sum;
    }
  }

  __device__ __forceinline__ void rescale_and_pack(const float (&corr)[2]) {
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      o[4 * j] *= corr[0];
      o[4 * j + 1] *= corr[0];
      o[4 * j + 2] *= corr[1];
      o[4 * j + 3] *= corr[1];
    }
    // ==== FLASHCORE EXTRA-WORK SPOT (docs/kernels.md) =========================================
    // Intentionally empty. Runs once per (warpgroup, key tile) between the softmax and P·V.
    // ==== END EXTRA-WORK SPOT ==================================================================
    if constexpr (C::kFp8) {
      // The 8-bit A fragment of k-step kk holds keys 4 t4 .. 4 t4 + 3 (+16) of rows g and g+8, but this
      // thread's S holds keys 2 t4, 2 t4 + 1, 8 + 2 t4, 9 + 2 t4 (+16) of each n8 tile pair. The binding
      // lays Vᵀ's keys out in that order inside every 16 (docs/kernels.md, "FP8"), so the register
      // bytes go to P V as they are: register 4 kk + 2 h + r is row g + 8 r, n8 tiles 4 kk + 2 h, +1.
#pragma unroll
      for (int kk = 0; kk < kBlockN / 32; ++kk) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int j = 4 * kk + 2 * h;
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            pf[4 * kk + 2 * h + r] = pack4_e4m3(s[4 * j + 2 * r], s[4 * j + 2 * r + 1], s[4 * (j + 1) + 2 * r],
                                                s[4 * (j + 1) + 2 * r + 1]);
          }
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kBlockN / 4; ++i) pf[i] = pack2<kBf16>(s[2 * i], s[2 * i + 1]);
    }
  }
};

template <class C, bool kBf16>
__global__ void __launch_bounds__(C::kThreads, 1)
    flashcore_wgmma_fwd_kernel(const __grid_constant__ FlashParams p, const __grid_constant__ TmaMaps maps,
                               bool persistent) {
  constexpr int kStages = C::kStages;
  constexpr int kConsumers = C::kConsumers;
  constexpr int kBlockM = C::kBlockM;
  constexpr int kBlockN = C::kBlockN;
  extern __shared__ uint8_t smem_raw[];
  // full_q, empty_q, full_k[], full_v[], empty_k[], empty_v[]
  __shared__ __align__(8) uint64_t bars[2 + 4 * kStages];
  constexpr int kRow = C::kRowBytes;
  const uint32_t sQ = (smem_addr(smem_raw) + 1023) & ~1023u;  // [kChunks][kBlockM][kRow bytes]
  const uint32_t sK = sQ + C::kQBytes;                          // [kStages][kChunks][kBlockN][kRow bytes]
  const uint32_t sV = sK + kStages * C::kKVBytes;               // as K; e4m3: [kStages][D][kBlockN bytes]
  const uint32_t sO = sV + kStages * C::kKVBytes;               // [kOChunks][kBlockM][64 halves]
  const uint32_t full_q = smem_addr(&bars[0]);
  const uint32_t empty_q = smem_addr(&bars[1]);
  auto full_k = [&](int s) { return smem_addr(&bars[2 + s]); };
  auto full_v = [&](int s) { return smem_addr(&bars[2 + kStages + s]); };
  auto empty_k = [&](int s) { return smem_addr(&bars[2 + 2 * kStages + s]); };
  auto empty_v = [&](int s) { return smem_addr(&bars[2 + 3 * kStages + s]); };
  // Keys the rows of the tile from row m0 see. Causal (top-left): rows of the tile see keys < m0 + kBlockM;
  // later key tiles are never loaded. >= 1 tile: S_k >= 1 and key 0 is seen by every row.
  auto key_tiles = [&](int m0) {
    const int n_end = p.causal ? min(p.seqlen_k, m0 + kBlockM) : p.seqlen_k;
    return (n_end + kBlockN - 1) / kBlockN;
  };
  const int wg = threadIdx.x / 128;
  const int tid = threadIdx.x % 128;

  if (threadIdx.x == 0) {
    mbar_init(full_q, 1);
    mbar_init(empty_q, kConsumers * 128);
    for (int s = 0; s < kStages; ++s) {
      mbar_init(full_k(s), 1);
      mbar_init(full_v(s), 1);
      mbar_init(empty_k(s), kConsumers * 128);
      mbar_init(empty_v(s), kConsumers * 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // Both roles count the K/V tiles they have passed (`it`, across output tiles: the ring's stage and
  // phase) and the output tiles (`nth`: the Q barriers' phase).
  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(C::kProducerRegs));
    if (tid == 0) {
      int it = 0;
      int nth = 0;
      for (TileSchedule ts(p, kBlockM, persistent, C::kCausalLead); ts.valid(); ts.advance(), ++nth) {
        const int m0 = ts.m0();
        const int b = ts.bh() / p.heads;
        const int h = ts.bh() % p.heads;
        const int n_tiles = key_tiles(m0);
        mbar_wait(empty_q, (nth & 1) ^ 1);  // a fresh barrier counts as having completed phase 1
        mbar_expect_tx(full_q, C::kQBytes);
#pragma unroll
        for (int c = 0; c < C::kChunks; ++c) {
          tma_load(sQ + c * kBlockM * kRow, &maps.q, full_q, c * C::kChunkElems, m0, h, b);
        }
        for (int t = 0; t < n_tiles; ++t, ++it) {
          const int s = it % kStages;
          const int phase = (it / kStages) & 1;
          mbar_wait(empty_k(s), phase ^ 1);
          mbar_expect_tx(full_k(s), C::kKVBytes);
#pragma unroll
          for (int c = 0; c < C::kChunks; ++c) {
            tma_load(sK + s * C::kKVBytes + c * kBlockN * kRow, &maps.k, full_k(s), c * C::kChunkElems, t * kBlockN, h,
                     b);
          }
          mbar_wait(empty_v(s), phase ^ 1);
          mbar_expect_tx(full_v(s), C::kKVBytes);
          if constexpr (C::kFp8) {
            tma_load(sV + s * C::kKVBytes, &maps.v, full_v(s), t * kBlockN, 0, h, b);  // Vᵀ: keys innermost
          } else {
#pragma unroll
            for (int c = 0; c < C::kChunks; ++c) {
              tma_load(sV + s * C::kKVBytes + c * kBlockN * 128, &maps.v, full_v(s), c * 64, t * kBlockN, h, b);
            }
          }
        }
      }
    }
  } else {
    // ---- consumers ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C::kConsumerRegs));
    const int w = wg - 1;  // rows [64 w, 64 w + 64) of the block
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int g = lane / 4;
    const int t4 = lane % 4;
    const float scale_log2 = p.softmax_scale * kLog2e;
    const uint32_t q_base = sQ + w * 64 * kRow;
    // Ping-pong turns: wait for ours before issuing wgmmas, hand the turn to the next consumer after
    // (round robin; barrier 1 + kConsumers + w is consumer w's turn, 1 .. kConsumers are the epilogue's).
    // Consumer 0 goes first: the last consumer hands it the first turn and none after its own last of
    // the block. Every consumer has the same turns (n_tiles + 1 per output tile).
    constexpr int kTurnBar = 1 + kConsumers;
    auto take_turn = [&] {
      if constexpr (C::kPingpong) named_sync(kTurnBar + w, 256);
    };
    auto pass_turn = [&](bool last) {
      if constexpr (C::kPingpong) {
        if (!(last && w == kConsumers - 1)) named_arrive(kTurnBar + (w + 1) % kConsumers, 256);
      }
    };
    if constexpr (C::kPingpong) {
      if (w == kConsumers - 1) named_arrive(kTurnBar, 256);
    }

    Consumer<C, kBf16> cs;
    int it = 0;
    int nth = 0;
    for (TileSchedule ts(p, kBlockM, persistent, C::kCausalLead); ts.valid(); ++nth) {
      const int m0 = ts.m0();
      const int b = ts.bh() / p.heads;
      const int h = ts.bh() % p.heads;
      const int n_tiles = key_tiles(m0);
      const bool store = ts.owns(m0 + w * 64);
      ts.advance();
      const bool last_tile = !ts.valid();
      // Accumulator layout (PTX ISA, wgmma .m64nNk16 D fragment): this thread holds rows g and g+8 of
      // its warp's 16, columns 8 j + 2 t4 (+1) of every n8 tile j.
      const int row0 = m0 + w * 64 + warp * 16 + g;
#pragma unroll
      for (int i = 0; i < Consumer<C, kBf16>::kORegs; ++i) cs.o[i] = 0.f;
      cs.row_max[0] = cs.row_max[1] = -INFINITY;
      cs.row_sum[0] = cs.row_sum[1] = 0.f;
      float corr[2];

      mbar_wait(full_q, nth & 1);
      mbar_wait(full_k(it % kStages), (it / kStages) & 1);
      take_turn();
      cs.issue_qk(q_base, sK + (it % kStages) * C::kKVBytes);
      pass_turn(false);
      wgmma_wait<0>();
      reg_fence(cs.s);
      mbar_arrive(empty_k(it % kStages));
      if (n_tiles == 1) mbar_arrive(empty_q);  // the tile's last Q Kᵀ is done: the next Q may load
      cs.softmax(p, 0, row0, t4, scale_log2, corr);
      cs.rescale_and_pack(corr);

      for (int t = 1; t < n_tiles; ++t) {
        const int s = (it + t) % kStages;
        const int sp = (it + t - 1) % kStages;
        mbar_wait(full_k(s), ((it + t) / kStages) & 1);
        mbar_wait(full_v(sp), ((it + t - 1) / kStages) & 1);
        take_turn();
        cs.issue_qk(q_base, sK + s * C::kKVBytes);
        cs.issue_pv(sV + sp * C::kKVBytes);
        pass_turn(false);
        wgmma_wait<1>();  // S_t is ready; P_{t-1} V_{t-1} may still run
        reg_fence(cs.s);
        mbar_arrive(empty_k(s));
        if (t == n_tiles - 1) mbar_arrive(empty_q);
        cs.softmax(p, t * kBlockN, row0, t4, scale_log2, corr);
        wgmma_wait<0>();
        reg_fence(cs.o);
        reg_fence(cs.pf);
        mbar_arrive(empty_v(sp));
        cs.rescale_and_pack(corr);
      }
      const int sl = (it + n_tiles - 1) % kStages;
      mbar_wait(full_v(sl), ((it + n_tiles - 1) / kStages) & 1);
      take_turn();
      cs.issue_pv(sV + sl * C::kKVBytes);
      pass_turn(last_tile);
      wgmma_wait<0>();
      reg_fence(cs.o);
      mbar_arrive(empty_v(sl));
      it += n_tiles;

      // Epilogue: O / l into this warpgroup's 64 rows of the output staging tile, in the same swizzled
      // layout as Q, then one TMA store per 64-column chunk (rows past S_q clipped). The store of the
      // previous tile must have read the staging rows before they are written again.
      float inv[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float sum = cs.row_sum[r];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        inv[r] = sum > 0.f ? 1.f / sum : 0.f;
      }
      if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      named_sync(1 + w, 128);
#pragma unroll
      for (int j = 0; j < C::D / 8; ++j) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int row = w * 64 + warp * 16 + g + 8 * r;  // row inside the block tile
          const int col = (j % 8) * 8 + 2 * t4;              // column inside the 64-wide chunk
          const uint32_t addr = sO + (j / 8) * kBlockM * 128 + row * 128 + ((((col / 8) ^ (row % 8)) * 16) | ((col % 8) * 2));
          const uint32_t v = pack2<kBf16>(cs.o[4 * j + 2 * r] * inv[r], cs.o[4 * j + 2 * r + 1] * inv[r]);
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
        }
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // make the stores visible to TMA
      named_sync(1 + w, 128);
      if (tid == 0 && store) {
#pragma unroll
        for (int c = 0; c < C::kOChunks; ++c) tma_store(&maps.o, sO + c * kBlockM * 128 + w * 64 * 128, c * 64, m0 + w * 64, h, b);
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      }
    }
    // The shared memory must outlive the last store's reads.
    if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  }
}

// Vᵀ for the e4m3 forward (params.h, `vt`): one block per 64 keys of one (b, h), staged in shared
// memory. It reads V's rows (D bytes each) and writes Vᵀ's rows (64 keys of one d), every 16 keys in
// the A-fragment order of P (position 4 t + 2 h + l holds key 2 t + 8 h + l); keys from S_k on are 0.
template <int D>
__global__ void __launch_bounds__(256) e4m3_v_transposed(const __grid_constant__ FlashParams p) {
  constexpr int kKeys = 64;
  __shared__ __align__(16) uint8_t tile[kKeys][D + 16];
  const int bh = blockIdx.y;
  const int k0 = blockIdx.x * kKeys;
  const uint8_t* v = static_cast<const uint8_t*>(p.v) + static_cast<int64_t>(bh / p.heads) * p.v_batch_stride +
                     static_cast<int64_t>(bh % p.heads) * p.v_head_stride;
  for (int i = threadIdx.x; i < kKeys * D / 16; i += blockDim.x) {
    const int r = i / (D / 16);
    const int c = i % (D / 16);
    uint4 val = make_uint4(0, 0, 0, 0);
    if (k0 + r < p.seqlen_k) val = *reinterpret_cast<const uint4*>(v + static_cast<int64_t>(k0 + r) * p.v_row_stride + c * 16);
    *reinterpret_cast<uint4*>(&tile[r][c * 16]) = val;
  }
  __syncthreads();
  uint8_t* vt = static_cast<uint8_t*>(p.vt) + static_cast<int64_t>(bh) * D * p.vt_keys;
  for (int i = threadIdx.x; i < D * (kKeys / 16); i += blockDim.x) {
    const int d = i / (kKeys / 16);
    const int g = i % (kKeys / 16);  // 16 keys: positions [16 g, 16 g + 16) of this block's 64
    if (k0 + 16 * g >= p.vt_keys) continue;
    uint32_t w[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      w[t] = 0;
#pragma unroll
      for (int e = 0; e < 4; ++e) w[t] |= static_cast<uint32_t>(tile[16 * g + 2 * t + 8 * (e >> 1) + (e & 1)][d]) << (8 * e);
    }
    *reinterpret_cast<uint4*>(vt + static_cast<int64_t>(d) * p.vt_keys + k0 + 16 * g) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

template <int D>
cudaError_t launch_e4m3_v_transposed(const FlashParams& p, cudaStream_t stream) {
  const dim3 grid((p.vt_keys + 63) / 64, p.batch * p.heads);
  e4m3_v_transposed<D><<<grid, 256, 0, stream>>>(p);
  return cudaGetLastError();
}

// ---- host side ----

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult status;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status) !=
            cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      ptr = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  }();
  return fn;
}

// How TMA sees one tensor: its element type and the swizzled row its boxes are stored in.
struct MapKind {
  CUtensorMapDataType type;
  int elem_bytes;
  int row_bytes;  // box width in bytes, and the swizzle: 128 or 64
};

MapKind map_kind(FlashDtype dtype, int row_bytes) {
  switch (dtype) {
    case FlashDtype::kBFloat16: return {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, row_bytes};
    case FlashDtype::kFloat8E4M3: return {CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, row_bytes};
    default: return {CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, row_bytes};
  }
}

// 4-D map of a [B][H][rows][inner] tensor (strides in elements), box = one swizzled row's width of
// `inner` x `box_rows` rows of one (b, h), zero fill out of bounds.
bool make_map(CUtensorMap* map, MapKind kind, const void* ptr, const FlashParams& p, int inner, int rows,
              int64_t row_stride, int64_t head_stride, int64_t batch_stride, int box_rows) {
  auto encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(p.heads), static_cast<cuuint64_t>(p.batch)};
  const cuuint64_t e = static_cast<cuuint64_t>(kind.elem_bytes);
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(row_stride) * e, static_cast<cuuint64_t>(head_stride) * e,
                                 static_cast<cuuint64_t>(batch_stride) * e};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(kind.row_bytes / kind.elem_bytes), static_cast<cuuint32_t>(box_rows),
                             1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUtensorMapSwizzle swizzle = kind.row_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
  return encode(map, kind.type, 4, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <class C, bool kBf16>
cudaError_t launch(const FlashParams& p, bool one_per_tile, cudaStream_t stream) {
  TmaMaps maps;
  const MapKind in = map_kind(p.dtype, C::kRowBytes);
  const MapKind out = map_kind(kBf16 ? FlashDtype::kBFloat16 : FlashDtype::kFloat16, 128);
  const int d = p.head_dim;
  // 16-bit V is [keys][D] like K; e4m3 reads Vᵀ, [D][vt_keys] (e4m3_v_transposed, params.h).
  const int64_t vt_head = static_cast<int64_t>(d) * p.vt_keys;
  const bool v_ok = C::kFp8 ? make_map(&maps.v, map_kind(p.dtype, 128), p.vt, p, p.vt_keys, d, p.vt_keys, vt_head,
                                       vt_head * p.heads, d)
                            : make_map(&maps.v, in, p.v, p, d, p.seqlen_k, p.v_row_stride, p.v_head_stride,
                                       p.v_batch_stride, C::kBlockN);
  if (!v_ok ||
      !make_map(&maps.q, in, p.q, p, d, p.seqlen_q, p.q_row_stride, p.q_head_stride, p.q_batch_stride, C::kBlockM) ||
      !make_map(&maps.k, in, p.k, p, d, p.seqlen_k, p.k_row_stride, p.k_head_stride, p.k_batch_stride, C::kBlockN) ||
      !make_map(&maps.o, out, p.o, p, d, p.seqlen_q, p.o_row_stride, p.o_head_stride, p.o_batch_stride, 64)) {
    return cudaErrorInvalidValue;
  }
  auto kernel = flashcore_wgmma_fwd_kernel<C, kBf16>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  if (err != cudaSuccess) return err;
  // One block per SM (the register file holds one) walks the tiles when there are more tiles than
  // SMs; a grid that fits in one wave keeps one block per tile, its most parallel form.
  const int m_blocks = (p.seqlen_q + C::kBlockM - 1) / C::kBlockM;
  const long long tiles = static_cast<long long>(p.batch) * p.heads * m_blocks;
  const int sms = sm_count();
  const bool persistent = C::kPersistent && !one_per_tile && tiles > sms;
  const dim3 grid = persistent ? dim3(static_cast<unsigned>(sms))
                               : dim3(m_blocks, p.batch * p.heads);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(p, maps, persistent);
  return cudaGetLastError();
}

// Tile configurations, named c<consumer warpgroups>n<keys per tile>: block = 64 x consumers query rows.
// A trailing p: the consumers take turns (ping-pong).
enum class Config { kC1N128, kC2N128, kC2N128P, kC2N176, kC2N176P, kC3N128, kC3N128P };

// A configuration and, for benchmarks only, one block per tile where its blocks would be persistent
// (the config's name with "-tiles": the persistent grid against the one it replaced, in one run).
struct Choice {
  Config config;
  bool one_per_tile;
};

template <int D, bool kBf16, bool kFp8>
cudaError_t launch_config(Choice choice, const FlashParams& p, cudaStream_t stream) {
  const bool t = choice.one_per_tile;
  switch (choice.config) {
    case Config::kC1N128: return launch<Cfg<D, 1, 128, false, kFp8>, kBf16>(p, t, stream);
    case Config::kC2N128: return launch<Cfg<D, 2, 128, false, kFp8>, kBf16>(p, t, stream);
    case Config::kC2N128P: return launch<Cfg<D, 2, 128, true, kFp8>, kBf16>(p, t, stream);
    // A 176-key ring of D=128 and its output tile do not fit in shared memory: D=64 only. An e4m3
    // Vᵀ tile row is its keys, one 128-byte swizzle row: 128 keys only.
    case Config::kC2N176:
      if constexpr (D == 64 && !kFp8) return launch<Cfg<64, 2, 176>, kBf16>(p, t, stream);
      return launch<Cfg<D, 2, 128, false, kFp8>, kBf16>(p, t, stream);
    case Config::kC2N176P:
      if constexpr (D == 64 && !kFp8) return launch<Cfg<64, 2, 176, true>, kBf16>(p, t, stream);
      return launch<Cfg<D, 2, 128, true, kFp8>, kBf16>(p, t, stream);
    // Three consumers get 160 registers each: S, O and P of D=128 do not fit, so D=64 only.
    case Config::kC3N128:
      if constexpr (D == 64) return launch<Cfg<64, 3, 128, false, kFp8>, kBf16>(p, t, stream);
      return launch<Cfg<D, 2, 128, false, kFp8>, kBf16>(p, t, stream);
    case Config::kC3N128P:
      if constexpr (D == 64) return launch<Cfg<64, 3, 128, true, kFp8>, kBf16>(p, t, stream);
      return launch<Cfg<D, 2, 128, true, kFp8>, kBf16>(p, t, stream);
  }
  return cudaErrorInvalidValue;
}

Config per_shape_config(const FlashParams& p) {
  // From the H100 sweep in docs/kernels.md: grids of 128-row blocks that cannot fill the SMs run
  // 64-row blocks (B1 H8 S512 D64: 7.2 us against 10.1 us); otherwise, at D=128, two consumers
  // (ping-pong measured within the run-to-run spread there, so it stays off).
  // e4m3 at D=64 holds P in half the registers, so three consumers fit: c3n128 measured 530 us against
  // 594 (c2n128) and 645 (c2n128p) on an H200 (docs/kernels.md, "FP8 (e4m3)"). 16-bit at D=64: three
  // consumers taking turns, FA3's choice there (596-608 us against 639-643 for the best two-consumer
  // config, causal 344 against 358, on an H200: docs/kernels.md, "Three consumers taking turns").
  const long long bh = static_cast<long long>(p.batch) * p.heads;
  if (bh * ((p.seqlen_q + 127) / 128) < sm_count()) return Config::kC1N128;
  if (p.dtype == FlashDtype::kFloat8E4M3) return p.head_dim == 64 ? Config::kC3N128 : Config::kC2N128;
  return p.head_dim == 64 ? Config::kC3N128P : Config::kC2N128;
}

Choice choose_config(const FlashParams& p) {
  // Tuning override for benchmarks (config_override.h).
  static constexpr ConfigName<Choice> kNames[] = {
      {"c1n128", {Config::kC1N128, false}},        {"c2n128", {Config::kC2N128, false}},
      {"c2n128p", {Config::kC2N128P, false}},      {"c2n176", {Config::kC2N176, false}},
      {"c2n176p", {Config::kC2N176P, false}},      {"c3n128", {Config::kC3N128, false}},
      {"c2n128-tiles", {Config::kC2N128, true}},   {"c2n128p-tiles", {Config::kC2N128P, true}},
      {"c3n128p", {Config::kC3N128P, false}},     {"c3n128-tiles", {Config::kC3N128, true}},
      {"c3n128p-tiles", {Config::kC3N128P, true}}};
  return config_override("FLASHCORE_WGMMA_CONFIG", kNames, Choice{per_shape_config(p), false});
}

}  // namespace flashcore

cudaError_t flashcore_forward(const FlashParams& p, cudaStream_t stream) {
  using namespace flashcore;
  const Choice c = choose_config(p);
  const bool d64 = p.head_dim == 64;
  if (p.head_dim != 64 && p.head_dim != 128) return cudaErrorInvalidValue;
  switch (p.dtype) {
    case FlashDtype::kFloat16:
      return d64 ? launch_config<64, false, false>(c, p, stream) : launch_config<128, false, false>(c, p, stream);
    case FlashDtype::kBFloat16:
      return d64 ? launch_config<64, true, false>(c, p, stream) : launch_config<128, true, false>(c, p, stream);
    case FlashDtype::kFloat8E4M3: {  // e4m3 in, bf16 out; Vᵀ first, on the same stream
      const cudaError_t err = d64 ? launch_e4m3_v_transposed<64>(p, stream) : launch_e4m3_v_transposed<128>(p, stream);
      if (err != cudaSuccess) return err;
      return d64 ? launch_config<64, true, true>(c, p, stream) : launch_config<128, true, true>(c, p, stream);
    }
  }
  return cudaErrorInvalidValue;
}
