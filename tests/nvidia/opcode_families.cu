// Compiled per arch by tests/nvidia/test_sass_families.py, which counts its SASS by opcode family.
// One of each: an HMMA (mma.sync), an ldmatrix, a stmatrix, a cp.async, a shuffle, global loads and
// stores, and __syncthreads; sm_90a adds an mbarrier and a bulk copy.
#include <cstdint>
__global__ void families(const int4* in, int4* out, float* acc) {
  __shared__ alignas(128) int4 tile[128];
  __shared__ alignas(8) uint64_t bar;
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(tile);
  const uint32_t mbar = (uint32_t)__cvta_generic_to_shared(&bar);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(base + threadIdx.x * 16), "l"(in + threadIdx.x));
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  uint32_t a0, a1, a2, a3;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(base + (threadIdx.x % 32) * 16));
  float d0 = acc[0], d1 = acc[1], d2 = acc[2], d3 = acc[3];
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(a0), "r"(a1));
  d0 += __shfl_xor_sync(0xffffffffu, d1, 1);
#if __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(base + (threadIdx.x % 32) * 16), "r"(a2));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(mbar));
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 2048;" :: "r"(mbar));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 2048, [%2];"
                 :: "r"(base), "l"(in), "r"(mbar) : "memory");
  }
#endif
  __syncthreads();
  out[threadIdx.x] = make_int4(__float_as_int(d0 + d2), __float_as_int(d3), a3, 0);
}
