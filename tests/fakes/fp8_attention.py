"""Kernels in Python for float8_e4m3fn attention, `module.forward(q, k, v, causal)` with e4m3 q, k, v
`[B,H,S,D]` on any device, returning bfloat16: right ones for the correctness stage to pass, wrong ones
for it to reject. torch is imported inside each, so this module imports without it."""

from __future__ import annotations

import math
from typing import Any


def float32_forward(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """Attention in float32 from the e4m3 values, rounded once into bfloat16."""
    import torch

    qf, kf, vf = (t.float() for t in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal).to(torch.bfloat16)


def fa3_forward(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """FlashAttention-3's FP8 numerics: P rounded to e4m3 before P·V, row sums from the unrounded P."""
    import torch

    qf, kf, vf = (t.float() for t in (q, k, v))
    scores = qf @ kf.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    p = torch.exp(scores - scores.amax(-1, keepdim=True))
    out = (p.to(torch.float8_e4m3fn).float() @ vf) / p.sum(-1, keepdim=True)
    return out.to(torch.bfloat16)


def garbage_forward(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """normal(0, 1) values of the output's shape, whatever the inputs."""
    import torch

    return torch.randn(q.shape, generator=torch.Generator().manual_seed(0)).to(q.device, torch.bfloat16)


def just_over_forward(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """Right, then shifted by 6 % of max(1, max|out|): above e4m3's 5 % tolerance, under its 2**-3 floor."""
    import torch

    out = fa3_forward(q, k, v, causal).float()
    return (out + 0.06 * max(1.0, out.abs().max().item())).to(torch.bfloat16)
