"""The physical floor: the shortest time a GPU could possibly take for a call's FLOPs and bytes.

    floor_us = max(flops / peak_flops(dtype), dram_bytes / peak_bandwidth) x 1e6

Peaks are the datasheets' (dense, boost clock); real kernels reach 60-80 % of them, so a time below
the floor is not fast but false (hidden work, a stale result). A dtype's tensor peak is the fastest
dense path that can pass correctness on it: fp16/bf16 for 16-bit inputs, TF32 for float32, FP8 for
float8 (an A100, without FP8, at its 16-bit rate). Event-timed samples start from a flushed L2, so
every byte comes from DRAM; graph-timed samples may run out of L2, so their bytes count at
`WARM_L2_SPEEDUP` x the DRAM peak (above Hopper's published 2-3x; not measured here). Dropping the
term for graphs left a graph that replayed nothing with no floor at all (issue 25).

Sources (all dense, SXM unless named; the datasheets print FP8 with sparsity, twice the dense figure):
  H100 SXM5: 989.4 TFLOP/s fp16/bf16, 494.7 TF32, 1978.9 FP8, 3.35 TB/s   (NVIDIA H100 Tensor Core GPU datasheet)
  H100 PCIe: 756.5 / 378 / 1513 TFLOP/s, 2.0 TB/s                         (same datasheet)
  H100 NVL : 835.5 / 417.5 / 1670.5 TFLOP/s, 3.9 TB/s                     (same datasheet)
  H200     : 989.4 / 494.7 / 1978.9 TFLOP/s, 4.8 TB/s                     (NVIDIA H200 Tensor Core GPU datasheet)
  A100 SXM : 312 / 156 TFLOP/s, no FP8, 2.039 TB/s (80 GB)                (NVIDIA A100 datasheet)
  L40S     : 362.05 / 183 / 733 TFLOP/s, 0.864 TB/s                       (NVIDIA L40S datasheet)
Order matters: the first pattern found in the device name wins ("H100 NVL" before "H100").
"""

from __future__ import annotations

from dataclasses import dataclass


WARM_L2_SPEEDUP = 4.0


@dataclass(frozen=True)
class Peak:
    tflops_16bit: float        # dense fp16/bf16 tensor-core throughput
    tflops_32bit: float        # dense TF32 tensor-core throughput (the fastest float32 path)
    dram_tb_s: float           # peak DRAM bandwidth, 1e12 bytes/s
    tflops_8bit: float         # dense FP8 tensor-core throughput (the 16-bit figure where there is none)


PEAKS: tuple[tuple[str, Peak], ...] = (
    ("H200", Peak(989.4, 494.7, 4.8, tflops_8bit=1978.9)),
    ("H100 NVL", Peak(835.5, 417.5, 3.9, tflops_8bit=1670.5)),
    ("H100 PCIe", Peak(756.5, 378.0, 2.0, tflops_8bit=1513.0)),
    ("H100", Peak(989.4, 494.7, 3.35, tflops_8bit=1978.9)),
    ("A100", Peak(312.0, 156.0, 2.039, tflops_8bit=312.0)),
    ("L40S", Peak(362.05, 183.0, 0.864, tflops_8bit=733.0)),
)
# Inputs of these dtypes are multiplied on the FP8 tensor cores (`Peak.tflops_8bit`).
FP8_DTYPES = frozenset({"float8_e4m3fn", "float8_e5m2"})


def model_peak(gpu_name: str) -> tuple[str, Peak] | None:
    """The known model named in `gpu_name` ("H100 NVL") and its datasheet peaks, else None."""
    for pattern, peak in PEAKS:
        if pattern.lower() in gpu_name.lower():
            return pattern, peak
    return None


def peak_for(gpu_name: str) -> Peak | None:
    """The datasheet peaks of the GPU whose name contains a known model, else None."""
    found = model_peak(gpu_name)
    return found[1] if found else None


@dataclass(frozen=True)
class Floor:
    floor_us: float
    basis: str                 # "compute 2.1 GFLOP at 989 TFLOP/s" -- what bound the floor


def floor_us(peak: Peak, dtype: str, flops: float | None, dram_bytes: float | None,
             warm_memory: bool = False) -> Floor | None:
    """The floor of one call, or None when the workload declares neither FLOPs nor bytes.
    `warm_memory`: the call may read its bytes from L2 (graph replays), at `WARM_L2_SPEEDUP` x DRAM."""
    tflops = (peak.tflops_32bit if dtype == "float32" else
              peak.tflops_8bit if dtype in FP8_DTYPES else peak.tflops_16bit)
    terms: list[tuple[float, str]] = []
    if flops:
        terms.append((flops / (tflops * 1e12) * 1e6, f"compute {flops / 1e9:.3g} GFLOP at {tflops:g} TFLOP/s"))
    if dram_bytes:
        tb_s = peak.dram_tb_s * (WARM_L2_SPEEDUP if warm_memory else 1.0)
        where = f" (L2, {WARM_L2_SPEEDUP:g} x DRAM)" if warm_memory else ""
        terms.append((dram_bytes / (tb_s * 1e12) * 1e6, f"memory {dram_bytes / 1e6:.3g} MB at {tb_s:g} TB/s{where}"))
    if not terms:
        return None
    us, basis = max(terms)
    return Floor(us, basis)
