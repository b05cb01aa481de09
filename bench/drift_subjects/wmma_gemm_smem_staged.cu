// The gate's WMMA GEMM sample as it was before commit a343f93 (kept here as a timing subject of
// bench/timing_drift.py, not as a sample): A and B tiles staged through padded shared memory. Issue 14
// measured "a shared-memory WMMA GEMM" at 457 vs 597 us on an H200; this is the sample's last
// shared-memory version. a343f93 replaced it with the global-fragment kernel in tests/samples/wmma_gemm
// after ncu measured 50 % bank conflicts in its staging. Same header and launcher as the sample: it
// drops into a copy of it.
// C = A * B^T with tensor cores (WMMA, fp16 in, fp32 accumulate).
// Block tile 64x64, four warps in a 2x2 grid, each warp 32x32 = 2x2 fragments of 16x16.
// A and B tiles are staged through shared memory with 8 halves of padding per row: a row stride of
// 80 bytes spreads ldmatrix's eight 16-byte rows over distinct banks (CUDA C Programming Guide,
// "Shared Memory" bank rules), so the main loop is free of bank conflicts.
#include <mma.h>

#include "kernels/wmma_gemm.h"

namespace {

constexpr int kTile = 64;        // block tile edge (rows of C and columns of C)
constexpr int kStep = 32;        // K slice staged per iteration
constexpr int kPad = 8;          // halves of padding per smem row
constexpr int kThreads = 128;    // four warps

}  // namespace

// A named namespace (not an anonymous one) keeps the mangled name stable across checkouts, so
// results of different revisions line up by function name.
namespace wmma_gemm_sample {

using namespace nvcuda;

__global__ void __launch_bounds__(kThreads) wmma_gemm_kernel(GemmParams p) {
    __shared__ __half a_s[kTile][kStep + kPad];
    __shared__ __half b_s[kTile][kStep + kPad];

    const int warp = threadIdx.x / 32;
    const int warp_row = (warp / 2) * 32;
    const int warp_col = (warp % 2) * 32;
    const int row0 = blockIdx.y * kTile;
    const int col0 = blockIdx.x * kTile;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < p.k; k0 += kStep) {
        // 64 rows x 32 halves per tile = 256 chunks of 8 halves; 128 threads load two each.
        for (int chunk = threadIdx.x; chunk < kTile * kStep / 8; chunk += kThreads) {
            const int r = chunk / (kStep / 8);
            const int c = (chunk % (kStep / 8)) * 8;
            const bool k_ok = k0 + c < p.k;   // K is a multiple of 16: a chunk is all in or all out
            uint4 a_val = make_uint4(0, 0, 0, 0);
            uint4 b_val = make_uint4(0, 0, 0, 0);
            if (k_ok && row0 + r < p.m)
                a_val = *reinterpret_cast<const uint4*>(p.a + (size_t)(row0 + r) * p.k + k0 + c);
            if (k_ok && col0 + r < p.n)
                b_val = *reinterpret_cast<const uint4*>(p.b + (size_t)(col0 + r) * p.k + k0 + c);
            *reinterpret_cast<uint4*>(&a_s[r][c]) = a_val;
            *reinterpret_cast<uint4*>(&b_s[r][c]) = b_val;
        }
        __syncthreads();
        for (int kk = 0; kk < kStep; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b_frag[2];
            for (int i = 0; i < 2; ++i)
                wmma::load_matrix_sync(a_frag[i], &a_s[warp_row + i * 16][kk], kStep + kPad);
            for (int j = 0; j < 2; ++j)
                wmma::load_matrix_sync(b_frag[j], &b_s[warp_col + j * 16][kk], kStep + kPad);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
        }
        __syncthreads();
    }

    for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
            const int r = row0 + warp_row + i * 16;
            const int c = col0 + warp_col + j * 16;
            if (r < p.m && c < p.n)   // M and N are multiples of 16: a fragment is all in or all out
                wmma::store_matrix_sync(p.c + (size_t)r * p.n + c, acc[i][j], p.n, wmma::mem_row_major);
        }
    }
}

}  // namespace wmma_gemm_sample

cudaError_t wmma_gemm_launch(const GemmParams& params, cudaStream_t stream) {
    const dim3 grid((params.n + kTile - 1) / kTile, (params.m + kTile - 1) / kTile);
    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, stream>>>(params);
    return cudaGetLastError();
}
