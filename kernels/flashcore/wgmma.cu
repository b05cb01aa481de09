// FlashCore Hopper forward kernel, FlashAttention-3 style (Shah et al., "FlashAttention-3", 2024):
// wgmma.mma_async for S = Q Kᵀ and O += P V, TMA loads completing on mbarriers, a producer warpgroup
// and two consumer warpgroups (warp specialisation, setmaxnreg), FP32 accumulators, online softmax.
//
// Block: kBlockM = 128 query rows of one (batch, head) at a time, 3 warpgroups (384 threads). Where
// there are more output tiles than SMs, the blocks are persistent: one per SM walks a list of tiles
// (TileSchedule), and the producer loads the next tile's Q, K and V while the consumers finish the
// last one and store its output from a staging tile of its own.
//   - Warpgroup 0, producer: drops to 24 registers; one thread issues cp.async.bulk.tensor (TMA)
//     loads of the Q tile once and of K and V tiles (kBlockN = 128 keys) into a kStages-deep ring,
//     each stage guarded by a "full" mbarrier (TMA completes its transaction bytes) and an "empty"
//     mbarrier (every consumer thread arrives when it no longer reads the stage). K and V have their
//     own barriers, so S = Q Kᵀ of a tile can start before its V has landed.
//   - Warpgroups 1 and 2, consumers: raise to 240 registers; each owns 64 query rows (one wgmma
//     m64 row block), so row statistics stay inside the warp (quad shuffles only).
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

#include <cuda.h>  // CUtensorMap and its enums (header only: the encoder is fetched at run time)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace flashcore {

constexpr float kLog2e = 1.4426950408889634f;

// A tile configuration: kConsumers warpgroups of 64 query rows each (kBlockM rows per block) and
// kBlockN keys per K/V tile.
template <int D_, int kConsumers_, int kBlockN_, bool kPingpong_ = false>
struct Cfg {
  static constexpr int D = D_;
  static constexpr int kConsumers = kConsumers_;
  static constexpr int kBlockN = kBlockN_;
  // Ping-pong (FA3 "inter-warpgroup overlap", two consumers only): the consumers take turns to issue
  // their wgmmas, so one warpgroup's softmax runs while the other's matrix work occupies the tensor cores.
  static constexpr bool kPingpong = kPingpong_;
  static_assert(!kPingpong || kConsumers == 2, "ping-pong needs exactly two consumer warpgroups");
  static constexpr int kBlockM = 64 * kConsumers;
  static constexpr int kThreads = 128 * (kConsumers + 1);
  // setmaxnreg budgets: 128 x producer + kThreads-128 x consumer <= 65536 registers per SM.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = kConsumers == 3 ? 160 : 240;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= 65536, "register file");
  // K/V ring depth: tiles loaded or in flight while the consumers still read the oldest. The gate's
  // demo sets it to 1 on this line to make a slower revision (docs/kernels.md, the wgmma demo hook).
  static constexpr int kStages = D == 64 ? 3 : 2;
  static constexpr int kChunks = D / 64;           // 64-half (128 B) column chunks, one swizzle width
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kKVBytes = kBlockN * D * 2;
  static constexpr int kOBytes = kQBytes;  // the output tile, staged for its TMA store
  // +1024: the dynamic shared-memory base is aligned up to the 1024 B swizzle atom by hand.
  static constexpr int kSmemBytes = 1024 + kQBytes + 2 * kStages * kKVBytes + kOBytes;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
  // Persistent blocks (FA3's tile scheduler): one block per SM walks a list of output tiles, so the
  // next tile's Q, K and V load while this one finishes and stores its output, instead of every
  // block starting by waiting for its first loads. The gate's demo sets it to false on this line for
  // the first Hopper revision (docs/kernels.md, the wgmma demo hooks).
  static constexpr bool kPersistent = true;
};

// Tensor maps of one launch, passed by value as a __grid_constant__ parameter (TMA reads them there).
struct TmaMaps {
  CUtensorMap q, k, v, o;
};

// ---- PTX wrappers (PTX ISA: "mbarrier", "cp.async.bulk.tensor", "wgmma", "setmaxnreg") ----

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Spins until the phase with parity `phase` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, int phase) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(phase)
        : "memory");
  } while (!done);
}

// TMA 4-D tile load (coordinates innermost first: d, row, head, batch) completing on `bar`.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2,
                                         int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}
// TMA 4-D tile store; the box is clipped to the tensor's bounds.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(map),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accesses of registers that an in-flight wgmma reads or writes
// across the wgmma_wait that precedes this call.
template <int N>
__device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void reg_fence(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"), 128-byte swizzle.
// K-major operands (Q, K): rows of 128 B, 8-row atoms 1024 B apart (SBO); LBO unused (1).
// MN-major operand (V, transposed B): 8 key rows of 128 B per atom, atoms along the keys 1024 B
// apart (SBO), 64-wide column chunks along D `lbo` bytes apart (LBO).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = (addr & 0x3FFFF) >> 4;
  d |= static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16;
  d |= static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32;
  d |= static_cast<uint64_t>(1) << 62;  // layout type 1: 128-byte swizzle
  return d;
}

template <int N>
struct Wgmma;

template <>
struct Wgmma<64> {
  // D[64x64] (+)= A[64x16] · B[16x64], A and B from shared memory (descriptors).
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void ss(float (&d)[32], uint64_t a, uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, %35;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, %35;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
  // D[64x64] += A[64x16] · B[16x64], A from registers (4 x 2 halves per thread), B from shared memory.
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
};

template <>
struct Wgmma<128> {
  // D[64x128] (+)= A[64x16] · B[16x128], A and B from shared memory (descriptors).
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void ss(float (&d)[64], uint64_t a, uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, %67;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, %67;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
  // D[64x128] += A[64x16] · B[16x128], A from registers (4 x 2 halves per thread), B from shared memory.
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void rs(float (&d)[64], const uint32_t (&a)[4], uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
};

template <>
struct Wgmma<176> {
  // D[64x176] (+)= A[64x16] · B[16x176], A and B from shared memory (descriptors).
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void ss(float (&d)[88], uint64_t a, uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, %91;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, %91;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
  // D[64x176] += A[64x16] · B[16x176], A from registers (4 x 2 halves per thread), B from shared memory.
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void rs(float (&d)[88], const uint32_t (&a)[4], uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %93, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, {%88, %89, %90, %91}, %92, p, 1, 1, %94;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %93, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n176k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, {%88, %89, %90, %91}, %92, p, 1, 1, %94;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
};

template <>
struct Wgmma<192> {
  // D[64x192] (+)= A[64x16] · B[16x192], A and B from shared memory (descriptors).
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void ss(float (&d)[96], uint64_t a, uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, %99;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, %99;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
          : "l"(a), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
  // D[64x192] += A[64x16] · B[16x192], A from registers (4 x 2 halves per thread), B from shared memory.
  template <bool kBf16, int kTransB>
  static __device__ __forceinline__ void rs(float (&d)[96], const uint32_t (&a)[4], uint64_t b, int scale_d) {
    if constexpr (kBf16) {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, %102;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    } else {
      asm volatile(
          "{\n.reg .pred p;\nsetp.ne.b32 p, %101, 0;\n"
          "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, {%96, %97, %98, %99}, %100, p, 1, 1, %102;\n}\n"
          : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d), "n"(kTransB));
    }
  }
};

// 2^x on the MUFU unit, flushing denormal results to zero (exp2f adds a range check and rescale).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Named barriers (ids 0-15; 0 is __syncthreads): 1 + w for warpgroup w's epilogue, 3 + w for the
// ping-pong turn of consumer w.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
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

template <class C, bool kBf16>
struct Consumer {
  static constexpr int D = C::D;
  static constexpr int kBlockN = C::kBlockN;
  static constexpr int kBlockM = C::kBlockM;
  static constexpr int kSRegs = kBlockN / 2;  // S accumulators per thread (m64 x kBlockN / 128 threads)
  static constexpr int kORegs = D / 2;

  float s[kSRegs];
  float o[kORegs];
  uint32_t pf[kBlockN / 4];  // P as half2: pf[4 kk + i] is register i of the A fragment of k-step kk
  float row_max[2];
  float row_sum[2];  // per-thread partial sums; reduced across the quad at the end

  // S = Q K_tᵀ for this warpgroup's 64 rows (asynchronous: committed, not waited).
  __device__ __forceinline__ void issue_qk(uint32_t q_base, uint32_t k_base) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t off = (kk % 4) * 32;  // k16 = 32 B inside the 128 B swizzled row
      const uint64_t a = smem_desc(q_base + (kk / 4) * kBlockM * 128 + off, 16, 1024);
      const uint64_t b = smem_desc(k_base + (kk / 4) * kBlockN * 128 + off, 16, 1024);
      Wgmma<kBlockN>::template ss<kBf16, 0>(s, a, b, kk > 0);
    }
    wgmma_commit();
  }

  // O += P V_t (asynchronous). V is [keys][D] with D contiguous: the MN-major B operand.
  __device__ __forceinline__ void issue_pv(uint32_t v_base) {
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const uint32_t a[4] = {pf[4 * kk], pf[4 * kk + 1], pf[4 * kk + 2], pf[4 * kk + 3]};
      Wgmma<D>::template rs<kBf16, 1>(o, a, smem_desc(v_base + kk * 16 * 128, kBlockN * 128, 1024), 1);
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
#pragma unroll
    for (int i = 0; i < kBlockN / 4; ++i) pf[i] = pack2<kBf16>(s[2 * i], s[2 * i + 1]);
  }
};

// The output tiles one block computes, in order. A tile is (m_block, b·H + h). Persistent blocks walk
// units of two tiles of one head, m and num_m − 1 − m, the heavier first: under a causal mask every
// unit then holds the same number of key tiles, so a static round-robin over units stays balanced
// (FA3 balances causal work with an atomic tile counter instead, which a kernel run on several
// streams at once could share). Units run head by head, so the blocks running at one time read the
// K and V of a few heads, which stay in L2. Without persistence, block (x, y) is tile
// (gridDim.x − 1 − x, y): the heaviest causal tiles first, so the tail of the grid is short work.
struct TileSchedule {
  int num_m, per_head, units;
  int unit, second;  // the current unit and which of its tiles (0: the heavier)
  bool persistent;

  __device__ TileSchedule(int seqlen_q, int block_m, int bh, bool persistent_)
      : num_m((seqlen_q + block_m - 1) / block_m), per_head((num_m + 1) / 2), units(bh * per_head),
        unit(persistent_ ? blockIdx.x : 0), second(0), persistent(persistent_) {}

  __device__ bool valid() const { return unit < (persistent ? units : 1); }
  __device__ int m_block() const {
    if (!persistent) return gridDim.x - 1 - blockIdx.x;
    const int k = unit % per_head;
    return second ? k : num_m - 1 - k;
  }
  __device__ int bh() const { return persistent ? unit / per_head : blockIdx.y; }
  __device__ void advance() {
    const int k = unit % per_head;
    if (persistent && !second && k != num_m - 1 - k) {
      second = 1;
    } else {
      second = 0;
      unit += persistent ? gridDim.x : 1;
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
  const uint32_t sQ = (smem_addr(smem_raw) + 1023) & ~1023u;  // [kChunks][kBlockM][64]
  const uint32_t sK = sQ + C::kQBytes;                          // [kStages][kChunks][kBlockN][64]
  const uint32_t sV = sK + kStages * C::kKVBytes;               // [kStages][kChunks][kBlockN][64]
  const uint32_t sO = sV + kStages * C::kKVBytes;               // [kChunks][kBlockM][64]
  const uint32_t full_q = smem_addr(&bars[0]);
  const uint32_t empty_q = smem_addr(&bars[1]);
  auto full_k = [&](int s) { return smem_addr(&bars[2 + s]); };
  auto full_v = [&](int s) { return smem_addr(&bars[2 + kStages + s]); };
  auto empty_k = [&](int s) { return smem_addr(&bars[2 + 2 * kStages + s]); };
  auto empty_v = [&](int s) { return smem_addr(&bars[2 + 3 * kStages + s]); };
  // Keys the rows of tile m_block see. Causal (top-left): rows of the tile see keys < m0 + kBlockM;
  // later key tiles are never loaded. >= 1 tile: S_k >= 1 and key 0 is seen by every row.
  auto key_tiles = [&](int m_block) {
    const int n_end = p.causal ? min(p.seqlen_k, (m_block + 1) * kBlockM) : p.seqlen_k;
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
      for (TileSchedule ts(p.seqlen_q, kBlockM, p.batch * p.heads, persistent); ts.valid(); ts.advance(), ++nth) {
        const int m0 = ts.m_block() * kBlockM;
        const int b = ts.bh() / p.heads;
        const int h = ts.bh() % p.heads;
        const int n_tiles = key_tiles(ts.m_block());
        mbar_wait(empty_q, (nth & 1) ^ 1);  // a fresh barrier counts as having completed phase 1
        mbar_expect_tx(full_q, C::kQBytes);
#pragma unroll
        for (int c = 0; c < C::kChunks; ++c) tma_load(sQ + c * kBlockM * 128, &maps.q, full_q, c * 64, m0, h, b);
        for (int t = 0; t < n_tiles; ++t, ++it) {
          const int s = it % kStages;
          const int phase = (it / kStages) & 1;
          mbar_wait(empty_k(s), phase ^ 1);
          mbar_expect_tx(full_k(s), C::kKVBytes);
#pragma unroll
          for (int c = 0; c < C::kChunks; ++c) {
            tma_load(sK + s * C::kKVBytes + c * kBlockN * 128, &maps.k, full_k(s), c * 64, t * kBlockN, h, b);
          }
          mbar_wait(empty_v(s), phase ^ 1);
          mbar_expect_tx(full_v(s), C::kKVBytes);
#pragma unroll
          for (int c = 0; c < C::kChunks; ++c) {
            tma_load(sV + s * C::kKVBytes + c * kBlockN * 128, &maps.v, full_v(s), c * 64, t * kBlockN, h, b);
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
    const uint32_t q_base = sQ + w * 64 * 128;
    // Ping-pong turns: wait for ours before issuing wgmmas, hand the turn over after. Consumer 0
    // goes first; both have the same turns (n_tiles + 1 per output tile), and consumer 1 hands over
    // none after its last of the block.
    auto take_turn = [&] {
      if constexpr (C::kPingpong) named_sync(3 + w, 256);
    };
    auto pass_turn = [&](bool last) {
      if constexpr (C::kPingpong) {
        if (!(last && w == 1)) named_arrive(3 + (w ^ 1), 256);
      }
    };
    if constexpr (C::kPingpong) {
      if (w == 1) named_arrive(3, 256);
    }

    Consumer<C, kBf16> cs;
    int it = 0;
    int nth = 0;
    for (TileSchedule ts(p.seqlen_q, kBlockM, p.batch * p.heads, persistent); ts.valid(); ++nth) {
      const int m0 = ts.m_block() * kBlockM;
      const int b = ts.bh() / p.heads;
      const int h = ts.bh() % p.heads;
      const int n_tiles = key_tiles(ts.m_block());
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
      if (tid == 0) {
#pragma unroll
        for (int c = 0; c < C::kChunks; ++c) tma_store(&maps.o, sO + c * kBlockM * 128 + w * 64 * 128, c * 64, m0 + w * 64, h, b);
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      }
    }
    // The shared memory must outlive the last store's reads.
    if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  }
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

// 4-D map of a [B][H][S][D] tensor (strides in elements), box = 64 columns x `box_rows` rows of one
// (b, h), 128-byte swizzle, zero fill out of bounds.
bool make_map(CUtensorMap* map, const void* ptr, const FlashParams& p, int seqlen, int64_t row_stride,
              int64_t head_stride, int64_t batch_stride, int box_rows) {
  auto encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(p.head_dim), static_cast<cuuint64_t>(seqlen),
                              static_cast<cuuint64_t>(p.heads), static_cast<cuuint64_t>(p.batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(row_stride) * 2, static_cast<cuuint64_t>(head_stride) * 2,
                                 static_cast<cuuint64_t>(batch_stride) * 2};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUtensorMapDataType type =
      p.dtype == FlashDtype::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return encode(map, type, 4, const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <class C, bool kBf16>
cudaError_t launch(const FlashParams& p, bool one_per_tile, cudaStream_t stream) {
  TmaMaps maps;
  if (!make_map(&maps.q, p.q, p, p.seqlen_q, p.q_row_stride, p.q_head_stride, p.q_batch_stride, C::kBlockM) ||
      !make_map(&maps.k, p.k, p, p.seqlen_k, p.k_row_stride, p.k_head_stride, p.k_batch_stride, C::kBlockN) ||
      !make_map(&maps.v, p.v, p, p.seqlen_k, p.v_row_stride, p.v_head_stride, p.v_batch_stride, C::kBlockN) ||
      !make_map(&maps.o, p.o, p, p.seqlen_q, p.o_row_stride, p.o_head_stride, p.o_batch_stride, 64)) {
    return cudaErrorInvalidValue;
  }
  auto kernel = flashcore_wgmma_fwd_kernel<C, kBf16>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes);
  if (err != cudaSuccess) return err;
  // One block per SM (the register file holds one) walks the tiles when there are more tiles than
  // SMs; a grid that fits in one wave keeps one block per tile, its most parallel form.
  const int m_blocks = (p.seqlen_q + C::kBlockM - 1) / C::kBlockM;
  const long long units = static_cast<long long>(p.batch) * p.heads * ((m_blocks + 1) / 2);
  const int sms = sm_count();
  const bool persistent = C::kPersistent && !one_per_tile && static_cast<long long>(p.batch) * p.heads * m_blocks > sms;
  const dim3 grid = persistent ? dim3(static_cast<unsigned>(units < sms ? units : sms))
                               : dim3(m_blocks, p.batch * p.heads);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(p, maps, persistent);
  return cudaGetLastError();
}

// Tile configurations, named c<consumer warpgroups>n<keys per tile>: block = 64 x consumers query rows.
// A trailing p: ping-pong between the two consumers.
enum class Config { kC1N128, kC2N128, kC2N128P, kC2N176, kC2N176P, kC3N128 };

// A configuration and, for benchmarks only, one block per tile where its blocks would be persistent
// (the config's name with "-tiles": the persistent grid against the one it replaced, in one run).
struct Choice {
  Config config;
  bool one_per_tile;
};

template <int D, bool kBf16>
cudaError_t launch_config(Choice choice, const FlashParams& p, cudaStream_t stream) {
  const bool t = choice.one_per_tile;
  switch (choice.config) {
    case Config::kC1N128: return launch<Cfg<D, 1, 128>, kBf16>(p, t, stream);
    case Config::kC2N128: return launch<Cfg<D, 2, 128>, kBf16>(p, t, stream);
    case Config::kC2N128P: return launch<Cfg<D, 2, 128, true>, kBf16>(p, t, stream);
    // A 176-key ring of D=128 and its output tile do not fit in shared memory: D=64 only.
    case Config::kC2N176:
      if constexpr (D == 64) return launch<Cfg<64, 2, 176>, kBf16>(p, t, stream);
      return launch<Cfg<D, 2, 128>, kBf16>(p, t, stream);
    case Config::kC2N176P:
      if constexpr (D == 64) return launch<Cfg<64, 2, 176, true>, kBf16>(p, t, stream);
      return launch<Cfg<D, 2, 128, true>, kBf16>(p, t, stream);
    // Three consumers get 160 registers each: S, O and P of D=128 do not fit, so D=64 only.
    case Config::kC3N128: return D == 64 ? launch<Cfg<64, 3, 128>, kBf16>(p, t, stream) : launch<Cfg<D, 2, 128>, kBf16>(p, t, stream);
  }
  return cudaErrorInvalidValue;
}

Config per_shape_config(const FlashParams& p) {
  // From the H100 sweep in docs/kernels.md: grids of 128-row blocks that cannot fill the SMs run
  // 64-row blocks (B1 H8 S512 D64: 7.2 us against 10.1 us); otherwise two consumers, taking turns
  // (ping-pong) at D=64, where the softmax is the larger share (642 us against 731 us at
  // B4 H16 S4096); at D=128 ping-pong measured within the run-to-run spread, so it stays off.
  const long long bh = static_cast<long long>(p.batch) * p.heads;
  if (bh * ((p.seqlen_q + 127) / 128) < sm_count()) return Config::kC1N128;
  return p.head_dim == 64 ? Config::kC2N128P : Config::kC2N128;
}

Choice choose_config(const FlashParams& p) {
  // Tuning override for benchmarks (config_override.h).
  static constexpr ConfigName<Choice> kNames[] = {
      {"c1n128", {Config::kC1N128, false}},        {"c2n128", {Config::kC2N128, false}},
      {"c2n128p", {Config::kC2N128P, false}},      {"c2n176", {Config::kC2N176, false}},
      {"c2n176p", {Config::kC2N176P, false}},      {"c3n128", {Config::kC3N128, false}},
      {"c2n128-tiles", {Config::kC2N128, true}},   {"c2n128p-tiles", {Config::kC2N128P, true}},
      {"c3n128-tiles", {Config::kC3N128, true}}};
  return config_override("FLASHCORE_WGMMA_CONFIG", kNames, Choice{per_shape_config(p), false});
}

}  // namespace flashcore

cudaError_t flashcore_forward(const FlashParams& p, cudaStream_t stream) {
  using namespace flashcore;
  const Choice c = choose_config(p);
  const bool bf16 = p.dtype == FlashDtype::kBFloat16;
  if (p.head_dim == 64) return bf16 ? launch_config<64, true>(c, p, stream) : launch_config<64, false>(c, p, stream);
  if (p.head_dim == 128) return bf16 ? launch_config<128, true>(c, p, stream) : launch_config<128, false>(c, p, stream);
  return cudaErrorInvalidValue;
}
