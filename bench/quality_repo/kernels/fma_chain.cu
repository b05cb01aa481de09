// Gate-quality subject: a dependent chain of FMAs per element, v <- v * 0.999 + 0.001, `iters` times,
// then GATE_EXTRA_PCT percent more FMAs on the same chain whose result is discarded. A variant
// changes only GATE_EXTRA_PCT: more arithmetic, identical memory traffic and layout.
#include <cuda_runtime.h>

#ifndef GATE_EXTRA_PCT
#define GATE_EXTRA_PCT 0
#endif

__global__ void fma_chain(const float* __restrict__ x, float* __restrict__ y, int n, int iters, int extra) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int j = 0; j < iters; ++j) v = fmaf(v, 0.999f, 0.001f);
  float d = v;  // extra work depends on v: it runs after the chain, it cannot overlap it
  for (int j = 0; j < extra; ++j) d = fmaf(d, 0.999f, 0.001f);
  if (d == 123456.789f) v += 1.0f;  // never true for these inputs; keeps `d` alive
  y[i] = v;
}

void launch_fma_chain(const float* x, float* y, int n, int iters, cudaStream_t stream) {
  const int extra = iters * GATE_EXTRA_PCT / 100;
  fma_chain<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n, iters, extra);
}
