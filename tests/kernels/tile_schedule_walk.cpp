// Walks flashcore::TileSchedule on the CPU (tests/kernels/test_tile_schedule.py).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime_api.h>  // before the stand-ins: its own __device__ stays its own

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
static Dim3 blockIdx, gridDim;
using std::min;
#undef __device__
#define __device__

#include "tile_schedule.h"

int main(int argc, char** argv) {
  if (argc != 10) {
    std::fprintf(stderr, "usage: walk B H S_q S_k block_m causal lead persistent grid_x\n");
    return 2;
  }
  FlashParams p{};
  p.batch = std::atoi(argv[1]);
  p.heads = std::atoi(argv[2]);
  p.seqlen_q = std::atoi(argv[3]);
  p.seqlen_k = std::atoi(argv[4]);
  const int block_m = std::atoi(argv[5]);
  p.causal = std::atoi(argv[6]) != 0;
  const bool lead = std::atoi(argv[7]) != 0, persistent = std::atoi(argv[8]) != 0;
  gridDim.x = static_cast<unsigned>(std::atoi(argv[9]));
  gridDim.y = persistent ? 1 : static_cast<unsigned>(p.batch * p.heads);
  for (unsigned y = 0; y < gridDim.y; ++y) {
    for (unsigned x = 0; x < gridDim.x; ++x) {
      blockIdx.x = x;
      blockIdx.y = y;
      for (flashcore::TileSchedule ts(p, block_m, persistent, lead); ts.valid(); ts.advance()) {
        std::printf("%u %u %d %d", x, y, ts.bh(), ts.m0());
        for (int w = 0; w < block_m / 64; ++w) std::printf(" %d", ts.owns(ts.m0() + 64 * w) ? 1 : 0);
        std::printf("\n");
      }
    }
  }
  return 0;
}
