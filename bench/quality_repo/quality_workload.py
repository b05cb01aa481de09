"""Workload of the gate-quality subject (`module:callable` form): y = chain of `iters` FMAs of x."""

from __future__ import annotations

from gate.checking.workloads import refill_normal

A, B = 0.999, 0.001


class FmaChain:
    name = "fma_chain"
    dtype_tolerance = {"float32": 1e-3}   # thousands of float32 roundings in sequence

    def make_inputs(self, shape, dtype, seed, device):
        import torch

        inputs = {"x": torch.empty(int(shape.params["n"]), dtype=torch.float32, device=device)}
        refill_normal(inputs, seed)
        inputs["iters"] = int(shape.params["iters"])
        return inputs

    refill = staticmethod(refill_normal)

    def call(self, module, function_name, inputs):
        return getattr(module, function_name)(inputs["x"], inputs["iters"])

    def reference(self, shape, inputs):
        # Closed form of the affine recurrence: v_n = 1 + a^n (x - 1), in float64.
        return (1.0 + A ** inputs["iters"] * (inputs["x"].double() - 1.0)).float()

    def lowp_reference(self, shape, inputs):
        v = inputs["x"].clone()
        for _ in range(inputs["iters"]):
            v.mul_(A).add_(B)
        return v

    def flops(self, shape):
        return 2.0 * int(shape.params["n"]) * int(shape.params["iters"])

    def peers(self, shape, inputs):
        return {}


def make():
    return FmaChain()


class FmaChainWithPeer(FmaChain):
    """The same subject with a fast PyTorch peer beside it, as cuBLAS stands beside a GEMM: the
    cross-job spread (`bench/gate_quality.py spread`) checks that a peer never changes how the kernel
    itself is timed (a peer once chose graph timing for a slow kernel timed alone: issue 14)."""

    def peers(self, shape, inputs):
        x = inputs["x"]
        return {"torch_fma": lambda: x * A + B}


def make_with_peer():
    return FmaChainWithPeer()
