"""The synthetic kernels: shapes, start levels, peers and gates (SYNTHETIC SAMPLE DATA, nothing measured).

Latency levels follow the story of commits (`gate.sample.story`); each job's numbers are that level
with ~1 % noise, the way an interleaved benchmark reports them (`gate.sample.judging`).
"""

from __future__ import annotations

from dataclasses import dataclass
from gate.domain.rule_catalog import Rule

SHAPES = {
    "attention": ["b1_h8_s512_d64", "b4_h16_s4096_d64_causal"],
    "gemm": ["m2048_n2048_k1024", "m4096_n4096_k4096"],
}
FLOPS = {   # forward FLOPs: attention 4*b*h*s^2*d (halved when causal), gemm 2*m*n*k
    "b1_h8_s512_d64": 4 * 1 * 8 * 512**2 * 64,
    "b4_h16_s4096_d64_causal": 4 * 4 * 16 * 4096**2 * 64 // 2,
    "m2048_n2048_k1024": 2 * 2048 * 2048 * 1024,
    "m4096_n4096_k4096": 2 * 4096**3,
}


@dataclass(frozen=True)
class KernelKind:
    workload: str
    latency_us: dict[str, float]           # H100 start level per shape
    peers_us: dict[str, dict[str, float]]  # shape -> peer -> H100 level
    tensor_pipe_pct: float
    registers: int
    smem_bytes: int
    gates: dict[str, float]


KERNELS: dict[str, KernelKind] = {
    "flashcore_scalar": KernelKind(
        "attention", {"b1_h8_s512_d64": 310.0, "b4_h16_s4096_d64_causal": 41_000.0},
        {}, 0.0, 72, 16_384, {Rule.MAX_LATENCY_REGRESSION_PCT: 3, Rule.MAX_SPILL_BYTES: 0}),
    "flashcore_wmma": KernelKind(
        "attention", {"b1_h8_s512_d64": 58.0, "b4_h16_s4096_d64_causal": 2_350.0},
        {"b1_h8_s512_d64": {"sdpa_flash": 31.0, "sdpa_cudnn": 27.5, "sdpa_efficient": 38.0},
         "b4_h16_s4096_d64_causal": {"sdpa_flash": 1_290.0, "sdpa_cudnn": 1_140.0,
                                     "sdpa_efficient": 1_720.0}},
        34.0, 96, 32_768,
        {Rule.MAX_LATENCY_REGRESSION_PCT: 3, Rule.MIN_TENSOR_PIPE_PCT: 25, Rule.MAX_BANK_CONFLICT_PCT: 5,
         Rule.MIN_WARPS_ACTIVE_PCT: 20, Rule.MAX_REGISTERS: 128, Rule.MAX_SPILL_BYTES: 0}),
    "gemm_tiled": KernelKind(
        "gemm", {"m2048_n2048_k1024": 21.0, "m4096_n4096_k4096": 198.0},
        {"m2048_n2048_k1024": {"cublas": 13.5}, "m4096_n4096_k4096": {"cublas": 151.0}},
        52.0, 128, 49_152,
        {Rule.MAX_LATENCY_REGRESSION_PCT: 3, Rule.MIN_TENSOR_PIPE_PCT: 40, Rule.MAX_REGISTERS: 168}),
}
ARCHES = ("sm_80", "sm_90")                                   # each kernel is built for both
PEERS_ON_A100 = {"sdpa_flash", "sdpa_efficient", "cublas"}   # cuDNN SDPA needs sm_90 here
A100_SLOWDOWN = 1.85
