"""Workloads: what a kernel computes, how to feed it, and what to compare it with.

Built in: `attention` (scaled-dot-product attention forward, q/k/v `[B,H,S,D]`, scale 1/sqrt(D),
`module.forward(q, k, v, causal)`) and `gemm` (A·Bᵀ, A `[M,K]`, B `[N,K]`, `module.forward(a, b)`).
A manifest may instead name `"module:callable"` inside the repository, returning an object with the
methods of `Workload` (`REQUIRED_METHODS`, the rest optional): docs/manifest.md ("A custom workload")
says what each is for. A custom workload's shapes are checked by its `check_shape` once loaded, a
refusal being a `ManifestError` (`error`), not a kernel fault (`reject`). Built-in inputs are
normal(0, 1), never zeros, which hide unwritten outputs and can run faster than real data.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from gate.domain import KernelSpec, Shape
from gate.errors import ManifestError
from gate.manifest.workload_file import workload_module_file

Inputs = dict[str, Any]   # name -> torch.Tensor


class Workload(Protocol):
    """Every method a workload may have; a custom one needs only `REQUIRED_METHODS` (see above)."""

    def check_shape(self, shape: Shape) -> str | None: ...
    def make_inputs(self, shape: Shape, dtype: str, seed: int, device: str) -> Inputs: ...
    def refill(self, inputs: Inputs, seed: int) -> None: ...
    def call(self, module: Any, function_name: str, inputs: Inputs) -> Any: ...
    def reference(self, shape: Shape, inputs: Inputs) -> Any: ...
    def lowp_reference(self, shape: Shape, inputs: Inputs) -> Any: ...
    def flops(self, shape: Shape) -> float: ...
    def dram_bytes(self, shape: Shape, dtype: str) -> float: ...
    def peers(self, shape: Shape, inputs: Inputs) -> dict[str, Callable[[], Any]]: ...


REQUIRED_METHODS = ("make_inputs", "refill", "call", "reference", "lowp_reference")

# Problems up to this many multiply-adds get a float64 reference; larger fp16/bf16/e4m3 ones float32 (still
# far more precise than the kernels under test, and float64 is ~60x slower on H100). A float32 run
# always gets float64: a float32 reference would be the very computation of `lowp_reference`, so
# PyTorch's own error would read 0 and every correct float32 kernel would fail (seen on the device
# with a foreign float32 attention kernel: "max error 1.85e-06 > 16 x PyTorch's 0").
_FLOAT64_MAX_MACS = 2**28
# The float64 attention formula holds one S x S score matrix per head; heads go in chunks of this size.
_FLOAT64_SCORES_BYTES = 2**30


def _float64_reference(macs: int, dtype: Any) -> bool:
    import torch

    return macs <= _FLOAT64_MAX_MACS or dtype == torch.float32


# Bytes per element of the dtypes a workload may allocate (torch's names): the run's dtypes
# (`float16`, `bfloat16`, `float32`, `float8_e4m3fn`) and those of the index, scale and accumulator
# tensors beside them.
DTYPE_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
               "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of `dtype` ("float16" -> 2), for a workload's `dram_bytes`; ValueError if unknown."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"no element size known for dtype {dtype!r} (known: {', '.join(DTYPE_BYTES)})") from None


def output_names(workload: Any) -> tuple[str, ...]:
    """The inputs `workload` names as written by the kernel (its `outputs` attribute; none without)."""
    names = getattr(workload, "outputs", ())
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ManifestError(f"{type(workload).__name__}.outputs must be a tuple of input names, got {names!r}",
                            key="workload")
    return tuple(names)


def read_only(workload: Any, inputs: Inputs) -> Inputs:
    """`inputs` without the outputs the kernel writes: what must come back unchanged, and what
    `perturb_one` may change between cases."""
    outputs = output_names(workload)
    missing = [n for n in outputs if n not in inputs]
    if missing:
        raise ManifestError(f"{type(workload).__name__}.outputs names {', '.join(missing)}, which make_inputs "
                            "did not return", key="workload")
    return {n: v for n, v in inputs.items() if n not in outputs}


def poison_outputs(workload: Any, inputs: Inputs) -> None:
    """NaN into every output argument before a checked call: an element the kernel leaves unwritten
    then reads NaN instead of the previous call's value (an integer output is set to its minimum)."""
    import torch

    for name in output_names(workload):
        out = inputs[name]
        out.fill_(float("nan") if out.is_floating_point() else torch.iinfo(out.dtype).min)


def torch_op(qualified: str) -> Any:
    """`torch.ops.<ns>.<op>` for "ns::op"; LookupError naming both when it is not registered."""
    import torch

    ns, sep, op = qualified.partition("::")
    if not sep or not ns.isidentifier() or not op.isidentifier():
        raise ValueError(f"expected 'namespace::op', got {qualified!r}")
    try:
        return getattr(getattr(torch.ops, ns), op)
    except (AttributeError, RuntimeError) as exc:
        raise LookupError(f"torch.ops has no {qualified}: the extension's TORCH_LIBRARY({ns}, ...) did not "
                          f"register {op!r} ({exc})") from exc


def entry(module: Any, function_name: str) -> Any:
    """What a workload calls for the manifest's `function`: the module's attribute (pybind11), else the
    op `torch.ops.<ns>.<name>` with <ns> the module's name (`TORCH_EXTENSION_NAME`) unless the name
    says its own ("ns::op")."""
    if "::" in function_name:
        return torch_op(function_name)
    found = getattr(module, function_name, None)
    if found is not None:
        return found
    return torch_op(f"{module.__name__.rsplit('.', 1)[-1]}::{function_name}")


def _torch_dtype(dtype: str) -> Any:
    import torch

    return getattr(torch, dtype)


# Canary elements on each side of every built-in input: NaN, so a read past either end poisons the
# output. 16384 elements (32 KiB in fp16) covers a stray K slice or row of any built-in shape.
GUARD_ELEMS = 16384


def guarded_empty(size: tuple[int, ...], dtype: str, device: str) -> Any:
    """A contiguous tensor of `size` inside a NaN-filled buffer with `GUARD_ELEMS` on each side."""
    import torch

    numel = math.prod(size)
    base = torch.full((numel + 2 * GUARD_ELEMS,), float("nan"), dtype=_torch_dtype(dtype), device=device)
    return base[GUARD_ELEMS:GUARD_ELEMS + numel].view(size)


def guard_damage(inputs: Inputs) -> list[str]:
    """Names of guarded inputs whose canaries were overwritten (something wrote out of bounds)."""
    import torch

    damaged = []
    for name, t in inputs.items():
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            continue
        whole = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage())
        start, end = t.storage_offset(), t.storage_offset() + t.numel()
        if whole.numel() == t.numel():
            continue                                        # not guarded (a custom workload's input)
        if not (bool(whole[:start].isnan().all()) and bool(whole[end:].isnan().all())):
            damaged.append(name)
    return damaged


def perturb_one(inputs: Inputs, seed: int) -> str:
    """Change one element of one floating input to a new value; returns "name[index]"."""
    import random

    import torch

    rng = random.Random(seed)
    names = [n for n, t in inputs.items() if isinstance(t, torch.Tensor) and t.is_floating_point()]
    name = rng.choice(names)
    flat = inputs[name].view(-1)
    index = rng.randrange(flat.numel())
    # normal(0,1) data: a change of >= 1. Rounded to float8_e4m3fn (3 mantissa bits: steps of 0.5 below 8,
    # where the new value lies) it moves by at most 0.25: still a change of >= 0.75.
    flat[index] = float(flat[index]) + 1.0 + rng.random()
    return f"{name}[{index}]"


def refill_normal(inputs: Inputs, seed: int) -> None:
    """New normal(0, 1) values into every tensor of `inputs`, in place, from one seeded generator. A
    float8 tensor gets float32 draws rounded into it (torch has no `normal_` for float8); every other
    dtype draws in place, as it always has, so the values of a seed stay what they were."""
    import torch

    gen = None
    for tensor in inputs.values():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            if gen is None:
                gen = torch.Generator(device=tensor.device).manual_seed(seed)
            if tensor.element_size() == 1:
                draws = torch.empty(tensor.shape, dtype=torch.float32, device=tensor.device)
                tensor.copy_(draws.normal_(generator=gen))
            else:
                tensor.normal_(generator=gen)


class Attention:
    """float8_e4m3fn inputs give a bfloat16 output (`OUTPUT_DTYPES`), as FlashAttention-3's FP8 forward
    does; every other dtype's output is in the input's dtype."""

    name = "attention"
    OUTPUT_DTYPES = {"float8_e4m3fn": "bfloat16"}

    def output_dtype(self, dtype: str) -> str:
        """The dtype of the kernel's output for inputs in `dtype`."""
        return self.OUTPUT_DTYPES.get(dtype, dtype)

    def make_inputs(self, shape: Shape, dtype: str, seed: int, device: str) -> Inputs:
        p = shape.params
        size = (int(p["b"]), int(p["h"]), int(p["s"]), int(p["d"]))
        inputs: Inputs = {n: guarded_empty(size, dtype, device) for n in "qkv"}
        refill_normal(inputs, seed)
        inputs["causal"] = bool(p.get("causal", False))   # not a tensor: refill and checks skip it
        return inputs

    refill = staticmethod(refill_normal)

    def call(self, module: Any, function_name: str, inputs: Inputs) -> Any:
        return entry(module, function_name)(inputs["q"], inputs["k"], inputs["v"], inputs["causal"])

    def reference(self, shape: Shape, inputs: Inputs) -> Any:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        causal = bool(shape.params.get("causal", False))
        q, k, v = (inputs[n] for n in "qkv")
        b, h, s, d = q.shape
        if _float64_reference(b * h * s * s * d, q.dtype):   # explicit formula in float64, by head chunks
            mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1) if causal else None
            heads = [t.reshape(b * h, s, d) for t in (q, k, v)]
            step = max(1, _FLOAT64_SCORES_BYTES // (s * s * 8))
            out = torch.empty(b * h, s, d, dtype=torch.float32, device=q.device)
            for i in range(0, b * h, step):
                q64, k64, v64 = (t[i:i + step].double() for t in heads)
                scores = q64 @ k64.transpose(-1, -2) / math.sqrt(d)
                if mask is not None:
                    scores.masked_fill_(mask, float("-inf"))
                out[i:i + step] = scores.softmax(-1) @ v64
            return out.reshape(b, h, s, d)
        # Large: float32 through the memory-efficient backend (no S x S matrix in memory).
        with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
            return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)

    def lowp_reference(self, shape: Shape, inputs: Inputs) -> Any:
        """SDPA in the output's dtype: the inputs' own for 16/32-bit runs. PyTorch has no e4m3 attention
        (SDPA finds no kernel for float8), so a float8_e4m3fn run gets bfloat16 SDPA on the upcast e4m3
        values: "k x PyTorch's error" is then bfloat16's, far below e4m3's, and the dtype's epsilon
        floor (`correctness.DTYPE_EPSILON`) is what carries the rule."""
        import torch.nn.functional as F

        causal = bool(shape.params.get("causal", False))
        q, k, v = (inputs[n] for n in "qkv")
        out_dtype = _torch_dtype(self.output_dtype(str(q.dtype).removeprefix("torch.")))
        q, k, v = (t.to(out_dtype) for t in (q, k, v))      # no copy when the dtype is already it
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def flops(self, shape: Shape) -> float:
        p = shape.params
        full = 4.0 * int(p["b"]) * int(p["h"]) * int(p["s"]) ** 2 * int(p["d"])   # Q·Kᵀ and P·V
        return full / 2 if p.get("causal") else full

    def dram_bytes(self, shape: Shape, dtype: str) -> float:
        p = shape.params
        elems = float(int(p["b"]) * int(p["h"]) * int(p["s"]) * int(p["d"]))
        return elems * (3 * dtype_bytes(dtype) + dtype_bytes(self.output_dtype(dtype)))   # q, k, v in; out

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
        m, n, k = (int(shape.params[x]) for x in "mnk")
        inputs = {"a": guarded_empty((m, k), dtype, device), "b": guarded_empty((n, k), dtype, device)}
        refill_normal(inputs, seed)
        return inputs

    refill = staticmethod(refill_normal)

    def call(self, module: Any, function_name: str, inputs: Inputs) -> Any:
        return entry(module, function_name)(inputs["a"], inputs["b"])

    def reference(self, shape: Shape, inputs: Inputs) -> Any:
        a, b = inputs["a"], inputs["b"]
        if _float64_reference(a.shape[0] * b.shape[0] * a.shape[1], a.dtype):
            return (a.double() @ b.double().T).float()
        return a.float() @ b.float().T

    def lowp_reference(self, shape: Shape, inputs: Inputs) -> Any:
        return inputs["a"] @ inputs["b"].T

    def flops(self, shape: Shape) -> float:
        return 2.0 * int(shape.params["m"]) * int(shape.params["n"]) * int(shape.params["k"])

    def dram_bytes(self, shape: Shape, dtype: str) -> float:
        m, n, k = (int(shape.params[x]) for x in "mnk")
        return (m + n) * k * dtype_bytes(dtype) + m * n * 2   # A, B read once; C at least 16-bit

    def peers(self, shape: Shape, inputs: Inputs) -> dict[str, Callable[[], Any]]:
        import torch

        a, b = inputs["a"], inputs["b"]
        return {"cublas": lambda: torch.matmul(a, b.T)}


def get_workload(kernel: KernelSpec, src_dir: Path) -> Workload:
    """The built-in workload named by the manifest, or `module:callable` loaded from the repository,
    every shape checked; `ManifestError` for what does not resolve or is refused (what the module
    itself raises propagates unchanged)."""
    if kernel.workload == "attention":
        return Attention()
    if kernel.workload == "gemm":
        return Gemm()
    key = f"kernel[{kernel.name!r}].workload"
    module_name, sep, attr = kernel.workload.partition(":")
    if not sep or not module_name or not attr:
        raise ManifestError(f"{kernel.workload!r}: expected attention, gemm or module:callable", key=key)
    path = workload_module_file(Path(src_dir).resolve(), module_name)
    if path is None:
        raise ManifestError(f"module {module_name!r} is not a file inside the repository", key=key)
    spec = importlib.util.spec_from_file_location(f"gate_workload_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ManifestError(f"{kernel.workload!r}: {attr!r} is not callable", key=key)
    workload = factory()
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(workload, m, None))]
    if missing:
        raise ManifestError(f"{kernel.workload!r}: the {type(workload).__name__} it returns has no "
                            f"{', '.join(missing)} (the protocol: docs/manifest.md)", key=key)
    check_shape = getattr(workload, "check_shape", None)
    for i, shape in enumerate(kernel.shapes if callable(check_shape) else ()):
        problem = check_shape(shape)
        if problem:
            raise ManifestError(f"{shape.toml}: {problem} (checked by {kernel.workload})",
                                key=f"kernel[{kernel.name!r}].shapes[{i}]")
    return workload

