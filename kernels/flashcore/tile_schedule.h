// FlashCore Hopper kernel: which output tiles each block of wgmma.cu computes, in which order.
#pragma once

#include "params.h"

namespace flashcore {

// The output tiles one block computes, in order. A tile is (m_block, b·H + h): rows [m0, m0 + kBlockM)
// of one head. Persistent blocks (one per SM) take the tiles of one list in rounds: in round r, block
// i takes list position r·G + i, or r·G + G − 1 − i when r is odd (G = gridDim.x, a "snake"). Tiles,
// not pairs of tiles, are the unit: B4 H16 S4096 at 192 rows is 1408 tiles, 11 rounds on 132 SMs
// (pairs took 12).
//   - Without the mask every tile costs the same; the list runs head by head, so the blocks running at
//     one time read the K and V of a few heads, which stay in L2.
//   - Causal tiles cost their key range, so the list is heaviest first (longest-processing-time
//     order): the last rounds hand out the shortest tiles and the blocks finish together, and the
//     snake gives each block a heavier and a lighter tile in every two rounds. It runs in bands of two
//     rows of tiles (m and m − 1 of head 0, of head 1, ...): neighbouring blocks read the same K and V
//     at the same time. (FA3 balances causal work with an atomic tile counter instead, which a kernel
//     run on several streams at once could share.)
//   - Causal tiles start `lead` rows early (Cfg::kCausalLead): the rows the last tile would hang past
//     S_q, rounded down to 64. Tile 0 then holds the short remainder and sees one or two key tiles,
//     where the last tile would have seen every key for its few valid rows. Tile 0 still computes
//     kBlockM rows; those from kBlockM − lead on belong to tile 1, so their warpgroups do not store them.
// Without persistence, block (x, y) is tile (gridDim.x − 1 − x, y): the heaviest causal tiles first, so
// the tail of the grid is short work.
// tests/kernels/test_tile_schedule.py compiles this header for the CPU, with blockIdx and gridDim stood
// in, and walks every block's list: each output row stored exactly once, each block's share of work.
// A persistent grid has fewer blocks than there are tiles (the launcher's rule), so every block starts
// on a tile.
struct TileSchedule {
  int num_m, heads, total, block_m, lead;
  int round, k;      // round, and this block's list position in it
  int m_blk, bh_;    // the tile at that position
  bool persistent, causal;

  __device__ TileSchedule(const FlashParams& p, int block_m_, bool persistent_, bool causal_lead)
      : num_m((p.seqlen_q + block_m_ - 1) / block_m_), heads(p.batch * p.heads), total(num_m * heads),
        block_m(block_m_), lead(p.causal && causal_lead ? (num_m * block_m_ - p.seqlen_q) / 64 * 64 : 0), round(0),
        k(blockIdx.x), persistent(persistent_), causal(p.causal) {
    locate();
  }

  __device__ void locate() {
    if (!persistent) {
      m_blk = gridDim.x - 1 - blockIdx.x;
      bh_ = blockIdx.y;
    } else if (!causal) {
      m_blk = k % num_m;
      bh_ = k / num_m;
    } else {
      const int band = k / (2 * heads);              // rows of tiles num_m − 1 − 2 band and the one below
      const int width = min(2, num_m - 2 * band);  // the last band of an odd num_m has one
      const int i = k - band * 2 * heads;
      m_blk = num_m - 1 - 2 * band - i % width;
      bh_ = i / width;
    }
  }
  __device__ bool valid() const { return persistent ? k < total : round == 0; }
  __device__ int bh() const { return bh_; }
  __device__ int m0() const { return m_blk == 0 ? 0 : m_blk * block_m - lead; }
  // Whether the 64 rows from row0 (of this tile) are this tile's to store.
  __device__ bool owns(int row0) const { return row0 < (m_blk + 1) * block_m - lead; }
  __device__ void advance() {
    ++round;
    k = round * gridDim.x + ((round & 1) ? gridDim.x - 1 - blockIdx.x : blockIdx.x);
    if (valid()) locate();
  }
};

}  // namespace flashcore
