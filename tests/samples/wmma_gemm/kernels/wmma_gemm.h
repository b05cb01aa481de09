// Plain C++ interface of the WMMA GEMM sample: no torch headers, a params struct (as in
// flash-attention's Flash_fwd_params), so the kernel builds with nvcc alone.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

struct GemmParams {
    const __half* a;   // [m, k] row-major
    const __half* b;   // [n, k] row-major: C = A * B^T
    float* c;          // [m, n] row-major, fp32
    int m;             // multiples of 16
    int n;
    int k;
};

// Launches on `stream`; returns the launch's error code (cudaSuccess on success).
cudaError_t wmma_gemm_launch(const GemmParams& params, cudaStream_t stream);
