// FlashCore: the device's multiprocessor count, which every launcher reads to decide whether a grid
// of large blocks fills the GPU (docs/kernels.md, the tile-config sweeps).
#pragma once

#include <cuda_runtime.h>

namespace flashcore {

// The current device's SM count; 132 (an H100/H200 SXM) if the runtime cannot say.
inline int sm_count() {
  int dev = 0;
  int n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    return 132;
  }
  return n;
}

}  // namespace flashcore
