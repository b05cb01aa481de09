"""The correctness stage on the CPU: `correctness.check` with CUDA's two calls stubbed and the attention
workload's inputs on the CPU, for the tests of what the stage judges (float8 attention, cached results).
torch is imported inside, so this module imports without it."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from gate.checking import correctness, workloads
from gate.domain import KernelSpec


class OnCpu(workloads.Attention):
    """The attention workload with its inputs on the CPU, whatever device the stage asks for."""

    def make_inputs(self, shape, dtype, seed, device):
        return super().make_inputs(shape, dtype, seed, "cpu")


def cpu_correctness(monkeypatch) -> Callable[..., Any]:
    """`check(forward, shapes, dtype, seeds, base_seed=None, workload=None)`: the stage's result for one
    forward; `base_seed` fixes the stage's random draw."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args, **kwargs: None)

    def check(forward, shapes, dtype, seeds, base_seed=None, workload=None):
        if base_seed is not None:
            monkeypatch.setattr(correctness.secrets, "randbits", lambda bits: base_seed)
        kernel = KernelSpec(name="k", sources=["k.cu"], shapes=shapes, dtypes=[dtype])
        return correctness.check(kernel, types.SimpleNamespace(forward=forward), workload or OnCpu(), seeds)
    return check
