"""wgmma.cu's tile schedule (kernels/flashcore/tile_schedule.h) walked on the CPU: every block's list of
output tiles, as the kernel's producer and consumers walk it, from a host build of the header with
blockIdx and gridDim stood in (tile_schedule_walk.cpp).

What the GPU tests can only sample, this checks for many shapes: each output row of each head is
stored by exactly one warpgroup, no tile starts before row 0, a persistent grid takes each tile once,
and the blocks' shares of the work are as balanced as docs/kernels.md says."""

import math
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    exe = tmp_path_factory.mktemp("walk") / "walk"
    subprocess.run(["nvcc", "-x", "c++", "-std=c++17", "-O1", f"-I{ROOT / 'kernels/flashcore'}",
                    str(HERE / "tile_schedule_walk.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)

    def run(b, h, sq, sk, block_m, causal, lead, persistent, grid):
        out = subprocess.run([str(exe), *map(str, (b, h, sq, sk, block_m, int(causal), int(lead), int(persistent), grid))],
                             check=True, capture_output=True, text=True).stdout
        tiles = []
        for line in out.splitlines():
            x, _y, bh, m0, *owns = map(int, line.split())
            tiles.append((x, bh, m0, owns))
        return tiles
    return run


def key_tiles(m0, block_m, sk, causal, block_n=128):
    return math.ceil((min(sk, m0 + block_m) if causal else sk) / block_n)


SHAPES = [(4, 16, 4096, 4096), (4, 17, 1000, 1000), (2, 40, 700, 500), (3, 24, 600, 900), (2, 20, 500, 500),
          (1, 3, 1, 1), (1, 1, 100, 7000), (3, 5, 4095, 4097)]


# The lead applies under the causal mask alone (tile_schedule.h: `lead(p.causal && causal_lead ? ...)`):
# without it, "early" walks exactly the schedule "from0" walks, so that pair is not run twice.
MASKS = [(False, False), (True, True), (True, False)]


@pytest.mark.parametrize("block_m", [64, 128, 192])
@pytest.mark.parametrize(("causal", "lead"), MASKS, ids=["noncausal", "causal-early", "causal-from0"])
@pytest.mark.parametrize("grid", [132, 7, "one per tile"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}H{}Sq{}Sk{}".format(*s))
def test_every_row_is_stored_exactly_once_and_every_tile_taken_once(walk, shape, block_m, causal, lead, grid):
    b, h, sq, sk = shape
    num_m = math.ceil(sq / block_m)
    # The launcher's rule: blocks are persistent only where the tiles outnumber them.
    persistent = grid != "one per tile" and b * h * num_m > grid
    tiles = walk(b, h, sq, sk, block_m, causal, lead, persistent, grid if persistent else num_m)
    assert len(tiles) == b * h * num_m
    assert len(Counter((bh, m0) for _, bh, m0, _ in tiles)) == len(tiles)       # no tile twice
    stored = []                             # (head, first row, end row) each warpgroup stores
    for _, bh, m0, owns in tiles:
        assert 0 <= m0 < sq and m0 % 64 == 0
        assert len(owns) == block_m // 64
        stored += [(bh, m0 + 64 * w, min(m0 + 64 * (w + 1), sq)) for w, own in enumerate(owns)
                   if own and m0 + 64 * w < sq]
    # Each head's rows exactly once: its stored ranges, in order, run from row 0 to row sq with no gap
    # and no overlap (row by row, a Counter of 262,144 rows took seconds per case).
    reached = dict.fromkeys(range(b * h), 0)
    for bh, first, end in sorted(stored):
        assert first == reached[bh], f"head {bh}: rows from {first} stored, {reached[bh]} expected next"
        reached[bh] = end
    assert reached == dict.fromkeys(range(b * h), sq)
    if not (causal and lead):
        assert sorted(m0 for _, bh, m0, _ in tiles if bh == 0) == [m * block_m for m in range(num_m)]


def test_b4_h16_s4096_at_192_rows_takes_11_rounds_and_balances_the_causal_work(walk):
    """The figures docs/kernels.md gives: 11 tiles per block at most without the mask (pairs took 12);
    under it, the busiest block's key tiles 182 against a perfect split's 176.5, and the head's short
    tile first, with two key tiles."""
    tiles = walk(4, 16, 4096, 4096, 192, False, True, True, 132)
    assert max(Counter(x for x, *_ in tiles).values()) == 11
    tiles = walk(4, 16, 4096, 4096, 192, True, True, True, 132)
    load = Counter()
    for x, _, m0, _ in tiles:
        load[x] += key_tiles(m0, 192, 4096, True)
    assert sum(load.values()) / 132 == pytest.approx(176.5, abs=0.05)
    assert max(load.values()) == 182
    assert sorted({m0 for _, _, m0, _ in tiles})[:3] == [0, 64, 256]           # started 128 rows early
    assert key_tiles(0, 192, 4096, True) == 2
    from_row_0 = walk(4, 16, 4096, 4096, 192, True, False, True, 132)
    assert max(key_tiles(m0, 192, 4096, True) for _, _, m0, _ in from_row_0 if m0 == 4032) == 32
