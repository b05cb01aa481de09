"""The built-in references are more precise than the run's dtype, so PyTorch's own error is never 0.

A float32 reference for a float32 run would be the very computation of `lowp_reference`: PyTorch's
error reads 0 and the tolerance, k x that error, rejects every correct float32 kernel (seen on the
device with a foreign float32 attention kernel). Needs torch (CPU is enough); skipped without it.
"""

from __future__ import annotations

import pytest

from gate.checking import workloads
from gate.domain import Shape

torch = pytest.importorskip("torch")


def _max_err(a, b):
    return (a.double() - b.double()).abs().max().item()


def test_a_large_float32_attention_gets_a_float64_reference(monkeypatch):
    monkeypatch.setattr(workloads, "_FLOAT64_MAX_MACS", 1)          # every shape counts as large
    att = workloads.Attention()
    shape = Shape({"b": 1, "h": 2, "s": 64, "d": 32, "causal": True})
    inputs = att.make_inputs(shape, "float32", 3, "cpu")
    ref, lowp = att.reference(shape, inputs), att.lowp_reference(shape, inputs)
    assert ref.dtype == torch.float32 and ref.shape == lowp.shape
    assert _max_err(ref, lowp) > 0      # PyTorch's float32 error is measured, not the same computation


def test_the_float64_attention_is_the_same_in_head_chunks(monkeypatch):
    att = workloads.Attention()
    shape = Shape({"b": 2, "h": 3, "s": 32, "d": 16})
    inputs = att.make_inputs(shape, "float32", 5, "cpu")
    whole = att.reference(shape, inputs)
    monkeypatch.setattr(workloads, "_FLOAT64_SCORES_BYTES", 32 * 32 * 8)   # one head per chunk
    chunked = att.reference(shape, inputs)
    assert torch.equal(whole, chunked)
    expected = torch.nn.functional.scaled_dot_product_attention(*(inputs[n].double() for n in "qkv"))
    assert _max_err(whole, expected) < 1e-6


def test_fp16_above_the_limit_keeps_the_float32_reference(monkeypatch):
    monkeypatch.setattr(workloads, "_FLOAT64_MAX_MACS", 1)
    gemm = workloads.Gemm()
    shape = Shape({"m": 16, "n": 8, "k": 32})
    half = gemm.make_inputs(shape, "bfloat16", 1, "cpu")
    single = gemm.make_inputs(shape, "float32", 1, "cpu")
    assert _max_err(gemm.reference(shape, half), half["a"].float() @ half["b"].float().T) == 0
    exact = single["a"].double() @ single["b"].double().T
    assert _max_err(gemm.reference(shape, single), exact.float()) == 0
