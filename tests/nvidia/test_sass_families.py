"""The SASS opcode families (`gate.nvidia.sass_families`) counted in real cuobjdump listings of a
kernel that writes a known number of each instruction (tests/nvidia/opcode_families.cu), and in a
listing of two functions with NOP padding."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gate.domain.names import Direction, Metric
from gate.nvidia.sass import disassemble, find_disassembler, parse_sass
from gate.nvidia.sass_families import FAMILIES, SASS_METRICS, family_counts

SOURCE = Path(__file__).with_name("opcode_families.cu")
M = Metric

# cuobjdump --dump-sass of two functions, trimmed: predicated instructions, and the NOPs that pad
# a function to its 128-byte boundary after its last branch.
LISTING = """\
\t\tFunction : _Z4tilePf
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/               @P0 STS.128 [R0], R4 ;
        /*0030*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0040*/                   LDSM.16.M88.4 R8, [R0] ;
        /*0050*/                   HMMA.16816.F32 R12, R8, R10, R12 ;
        /*0060*/              @!P1 HMMA.16816.F32 R12, R8, R10, R12 ;
        /*0070*/                   SHFL.BFLY PT, R3, R12, 0x1, 0x1f ;
        /*0080*/                   STG.E desc[UR4][R6.64], R3 ;
        /*0090*/                   EXIT ;
        /*00a0*/                   BRA 0xa0;
        /*00b0*/                   NOP;
        /*00c0*/                   NOP;
\t\tFunction : _Z4tmaPv
        /*0000*/                   SYNCS.EXCH.64 URZ, [UR4], UR6 ;
        /*0010*/                   UTMALDG.2D [UR8], [UR10] ;
        /*0020*/                   UBLKCP.S.G [UR4], [UR6], UR8 ;
        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2 ;
        /*0040*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;
        /*0050*/                   EXIT ;
        /*0060*/                   NOP;
"""


def test_a_kernels_functions_are_summed_family_by_family_and_padding_is_no_instruction():
    counts = family_counts(parse_sass(LISTING).values())
    assert list(counts) == list(SASS_METRICS)
    assert counts == {M.SASS_TENSOR_CORE: 3, M.SASS_SHARED: 2, M.SASS_GLOBAL: 2, M.SASS_ASYNC_COPY: 2,
                      M.SASS_BARRIER: 3, M.SASS_SHUFFLE: 1, M.SASS_TOTAL: 17}   # 20 listed, 3 NOPs


def test_no_histogram_counts_zero_in_every_family():
    assert family_counts([]) == dict.fromkeys(SASS_METRICS, 0)
    assert family_counts([{"FFMA": 4, "NOP": 8}]) == {**dict.fromkeys(SASS_METRICS, 0), M.SASS_TOTAL: 4}


def test_the_families_are_disjoint_stored_metrics_read_as_neither_better_nor_worse():
    seen: set[str] = set()
    for opcodes in FAMILIES.values():
        assert not seen & opcodes
        seen |= opcodes
    assert SASS_METRICS[-1] is M.SASS_TOTAL and len(set(SASS_METRICS)) == len(SASS_METRICS)
    for metric in SASS_METRICS:
        assert metric.value.startswith("sass_") and metric.unit == "instructions"
        assert metric.direction is Direction.NEITHER and metric.info.label


def _families_of(tmp_path: Path, arch: str) -> dict[Metric, int]:
    tool = find_disassembler("nvcc")
    if tool is None:
        pytest.skip("no cuobjdump or nvdisasm here")
    cubin = tmp_path / f"families-{arch}.cubin"
    subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-o", str(cubin), str(SOURCE)],
                   check=True, capture_output=True, timeout=300)
    (histogram,) = disassemble(tool, cubin).values()
    counts = family_counts([histogram])
    assert counts[M.SASS_TOTAL] == sum(histogram.values()) - histogram.get("NOP", 0)
    return counts


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_one_mma_cp_async_and_shuffle_and_two_syncthreads_count_as_written_on_sm_80(tmp_path):
    counts = _families_of(tmp_path, "sm_80")
    assert counts[M.SASS_TENSOR_CORE] == 1        # mma.sync m16n8k16 -> HMMA.16816
    assert counts[M.SASS_ASYNC_COPY] == 1         # cp.async -> LDGSTS
    assert counts[M.SASS_SHUFFLE] == 1            # __shfl_xor_sync -> SHFL.BFLY
    assert counts[M.SASS_BARRIER] == 2            # __syncthreads x 2 -> BAR.SYNC
    assert counts[M.SASS_SHARED] >= 1             # ldmatrix -> LDSM
    assert counts[M.SASS_GLOBAL] >= 2             # the loads of `acc`, the store to `out`


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_sm_90a_adds_the_bulk_copy_to_async_copies_and_the_mbarrier_to_barriers(tmp_path):
    counts = _families_of(tmp_path, "sm_90a")
    assert counts[M.SASS_TENSOR_CORE] == 1
    assert counts[M.SASS_ASYNC_COPY] == 2         # LDGSTS and cp.async.bulk -> UBLKCP
    assert counts[M.SASS_BARRIER] >= 3            # two BAR.SYNC and the mbarrier's SYNCS
    assert counts[M.SASS_SHARED] >= 2             # LDSM and stmatrix -> STSM
    assert counts[M.SASS_SHUFFLE] == 1
