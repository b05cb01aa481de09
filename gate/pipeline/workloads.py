"""Workloads: what a kernel computes, how to feed it, and what to compare it with.

Built in: `attention` (scaled-dot-product attention forward, q/k/v `[B,H,S,D]`, scale 1/sqrt(D),
`module.forward(q, k, v, causal)`) and `gemm` (A·Bᵀ, A `[M,K]`, B `[N,K]`, `module.forward(a, b)`).
A manifest may instead name `"module:callable"` inside the repository: the callable returns an
object with the same methods as `Workload` below.

Inputs are a `dict[str, Tensor]`; `refill` writes new random values into the *same* buffers, so a
kernel that caches results keyed on pointers fails the next check. Random values are normal(0, 1):
never zeros, which hide unwritten outputs and can run faster than real data.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from gate.domain import KernelSpec, Shape
from gate.errors import ManifestError

Inputs = dict[str, Any]   # name -> torch.Tensor


class Workload(Protocol):
    name: str

    def make_inputs(self, shape: Shape, dtype: str, seed: int, device: str) -> Inputs: ...
    def refill(self, inputs: Inputs, seed: int) -> None: ...
    def call(self, module: Any, function_name: str, inputs: Inputs) -> Any: ...
    def reference(self, shape: Shape, inputs: Inputs) -> Any: ...
    def lowp_reference(self, shape: Shape, inputs: Inputs) -> Any: ...
    def flops(self, shape: Shape) -> float: ...
    def peers(self, shape: Shape, inputs: Inputs) -> dict[str, Callable[[], Any]]: ...


# Problems up to this many multiply-adds get a float64 reference; larger ones float32 (still far
# more precise than the fp16/bf16 kernels under test, and float64 is ~60x slower on H100).
_FLOAT64_MAX_MACS = 2**28


def _torch_dtype(dtype: str) -> Any:
    import torch

    return getattr(torch, dtype)


def refill_normal(inputs: Inputs, seed: int) -> None:
    """New normal(0, 1) values into every tensor of `inputs`, in place, from one seeded generator."""
    import torch

    gen = None
    for tensor in inputs.values():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            if gen is None:
                gen = torch.Generator(device=tensor.device).manual_seed(seed)
            tensor.normal_(generator=gen)


class Attention:
    name = "attention"

    def make_inputs(self, shape: Shape, dtype: str, seed: int, device: str) -> Inputs:
        import torch

        p = shape.params
        size = (int(p["b"]), int(p["h"]), int(p["s"]), int(p["d"]))
        inputs: Inputs = {n: torch.empty(size, dtype=_torch_dtype(dtype), device=device) for n in "qkv"}
        refill_normal(inputs, seed)
        inputs["causal"] = bool(p.get("causal", False))   # not a tensor: refill and checks skip it
        return inputs

    refill = staticmethod(refill_normal)

    def call(self, module: Any, function_name: str, inputs: Inputs) -> Any:
        return getattr(module, function_name)(inputs["q"], inputs["k"], inputs["v"], inputs["causal"])

    def reference(self, shape: Shape, inputs: Inputs) -> Any:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        causal = bool(shape.params.get("causal", False))
        q, k, v = (inputs[n] for n in "qkv")
        b, h, s, d = q.shape
        if b * h * s * s * d <= _FLOAT64_MAX_MACS:   # explicit formula in float64
            q64, k64, v64 = (t.double() for t in (q, k, v))
            scores = q64 @ k64.transpose(-1, -2) / math.sqrt(d)
            if causal:
                mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
                scores.masked_fill_(mask, float("-inf"))
            return (scores.softmax(-1) @ v64).float()
        # Large: float32 through the memory-efficient backend (no S x S matrix in memory).
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
            return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)

    def lowp_reference(self, shape: Shape, inputs: Inputs) -> Any:
        import torch.nn.functional as F

        causal = bool(shape.params.get("causal", False))
        return F.scaled_dot_product_attention(inputs["q"], inputs["k"], inputs["v"], is_causal=causal)

    def flops(self, shape: Shape) -> float:
        p = shape.params
        full = 4.0 * int(p["b"]) * int(p["h"]) * int(p["s"]) ** 2 * int(p["d"])   # Q·Kᵀ and P·V
        return full / 2 if p.get("causal") else full

    def peers(self, shape: Shape, inputs: Inputs) -> dict[str, Callable[[], Any]]:
        """PyTorch SDPA's flash, cuDNN and efficient backends; a backend that refuses is skipped."""
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        causal = bool(shape.params.get("causal", False))
        q, k, v = (inputs[n] for n in "qkv")
        found: dict[str, Callable[[], Any]] = {}
        for label, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                               ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION),
                               ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION)):
            def run(backend: Any = backend) -> Any:
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                run()
            except RuntimeError:   # "No available kernel": not built in, or not for this shape/GPU
                continue
            found[label] = run
        return found


class Gemm:
    name = "gemm"

    def make_inputs(self, shape: Shape, dtype: str, seed: int, device: str) -> Inputs:
        import torch

        m, n, k = (int(shape.params[x]) for x in "mnk")
        inputs = {"a": torch.empty(m, k, dtype=_torch_dtype(dtype), device=device),
                  "b": torch.empty(n, k, dtype=_torch_dtype(dtype), device=device)}
        refill_normal(inputs, seed)
        return inputs

    refill = staticmethod(refill_normal)

    def call(self, module: Any, function_name: str, inputs: Inputs) -> Any:
        return getattr(module, function_name)(inputs["a"], inputs["b"])

    def reference(self, shape: Shape, inputs: Inputs) -> Any:
        a, b = inputs["a"], inputs["b"]
        if a.shape[0] * b.shape[0] * a.shape[1] <= _FLOAT64_MAX_MACS:
            return (a.double() @ b.double().T).float()
        return a.float() @ b.float().T

    def lowp_reference(self, shape: Shape, inputs: Inputs) -> Any:
        return inputs["a"] @ inputs["b"].T

    def flops(self, shape: Shape) -> float:
        return 2.0 * int(shape.params["m"]) * int(shape.params["n"]) * int(shape.params["k"])

    def peers(self, shape: Shape, inputs: Inputs) -> dict[str, Callable[[], Any]]:
        import torch

        a, b = inputs["a"], inputs["b"]
        return {"cublas": lambda: torch.matmul(a, b.T)}


def get_workload(kernel: KernelSpec, src_dir: Path) -> Workload:
    """The built-in workload named by the manifest, or `module:callable` loaded from the repo."""
    if kernel.workload == "attention":
        return Attention()
    if kernel.workload == "gemm":
        return Gemm()
    module_name, sep, attr = kernel.workload.partition(":")
    if not sep or not module_name or not attr:
        raise ManifestError(f"workload {kernel.workload!r}: expected attention, gemm or module:callable",
                            key="workload")
    root = Path(src_dir).resolve()
    path = (root / Path(*module_name.split("."))).with_suffix(".py").resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise ManifestError(f"workload module {module_name!r} is not a file inside the repository",
                            key="workload")
    spec = importlib.util.spec_from_file_location(f"gate_workload_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ManifestError(f"workload {kernel.workload!r}: {attr!r} is not callable", key="workload")
    return factory()
