// Sample of the most common foreign layout: the kernel and its host function in one .cu that
// includes torch headers, the pybind11 module in main.cpp. C = A * B^T, A [M,K], B [N,K], fp16 in,
// fp32 accumulation. A plain shared-memory tiled GEMM: what matters here is the layout, not speed.
#include <torch/types.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

constexpr int kTile = 32;

__global__ void tiled_gemm_kernel(const __half* a, const __half* b, __half* c, int m, int n, int k) {
    __shared__ float a_s[kTile][kTile + 1];   // +1: column reads of b_s below stay conflict-free
    __shared__ float b_s[kTile][kTile + 1];
    const int row = blockIdx.y * kTile + threadIdx.y;
    const int col = blockIdx.x * kTile + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += kTile) {
        const int ka = k0 + threadIdx.x;
        a_s[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? __half2float(a[(size_t)row * k + ka]) : 0.0f;
        const int brow = blockIdx.x * kTile + threadIdx.y;
        b_s[threadIdx.y][threadIdx.x] = (brow < n && ka < k) ? __half2float(b[(size_t)brow * k + ka]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kTile; ++kk) acc += a_s[threadIdx.y][kk] * b_s[threadIdx.x][kk];
        __syncthreads();
    }
    if (row < m && col < n) c[(size_t)row * n + col] = __float2half(acc);
}

torch::Tensor forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda(), "a and b must be CUDA tensors");
    TORCH_CHECK(a.scalar_type() == torch::kHalf && b.scalar_type() == torch::kHalf, "a and b must be float16");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(1), "a [M,K] and b [N,K] expected");
    a = a.contiguous();
    b = b.contiguous();
    const int m = a.size(0), n = b.size(0), k = a.size(1);
    auto c = torch::empty({m, n}, a.options());
    const dim3 block(kTile, kTile);
    const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
    tiled_gemm_kernel<<<grid, block>>>(reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
                                       reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
                                       reinterpret_cast<__half*>(c.data_ptr<at::Half>()), m, n, k);
    return c;
}
