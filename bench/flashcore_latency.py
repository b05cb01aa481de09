"""Latency of the FlashCore kernels beside PyTorch SDPA's flash, cuDNN and efficient backends.

One run prints a table (median µs and TFLOP/s per shape and implementation) and, with --json,
writes it as JSON. Timing (METHOD.md, DESIGN.md "Measurement principles"): CUDA events around each
repetition after warm-up, the L2 flushed (a 256 MB buffer written) before every repetition, and the
implementations of a shape timed in turns (ROUNDS rounds, order rotated), so a drift of the clocks
reaches them alike and the ratios of one run are fair. Small
shapes run as CUDA graphs of GRAPH_CALLS calls, each on its own input set, to remove launch gaps.
FLOPs = 4·B·H·S²·D (two matmuls), half of that when causal.

Rows named `... e4m3` take float8_e4m3fn q, k, v (converted once from the same fp16 inputs) and give
a bf16 output: flashcore_wgmma's FP8 forward (its Vᵀ copy in the binding included) and SDPA's cuDNN
backend, which is timed if this torch accepts e4m3 inputs and otherwise listed with its refusal.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "extension"))
import flashcore_build  # noqa: E402

GRAPH_CALLS = 20
ROUNDS = 10  # turns each implementation takes in a shape's timing (time_interleaved)
E4M3 = torch.float8_e4m3fn
FLUSH_BYTES = 256 << 20
SDPA_BACKENDS = {
    "sdpa_flash": SDPBackend.FLASH_ATTENTION,
    "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION,
    "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
}


@dataclass(frozen=True)
class Shape:
    b: int
    h: int
    s: int
    d: int
    causal: bool

    @property
    def label(self) -> str:
        return f"B{self.b} H{self.h} S{self.s} D{self.d}{' causal' if self.causal else ''}"

    @property
    def flops(self) -> float:
        return 4.0 * self.b * self.h * self.s * self.s * self.d / (2 if self.causal else 1)

    @property
    def use_graph(self) -> bool:
        return self.b * self.h * self.s <= 8 * 1024


SHAPES = [
    Shape(1, 8, 512, 64, False),
    Shape(4, 16, 4096, 64, False),
    Shape(4, 16, 4096, 64, True),
    Shape(4, 16, 4096, 128, False),
]


@dataclass
class Row:
    shape: str
    impl: str
    median_us: float | None  # None when the implementation could not run (see note)
    p10_us: float | None
    p90_us: float | None
    tflops: float | None
    reps: int
    note: str = ""


def make_inputs(shape: Shape, n: int, seed: int = 0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda: torch.randn(shape.b, shape.h, shape.s, shape.d, device="cuda", dtype=torch.float16, generator=g)  # noqa: E731
    return [(mk(), mk(), mk()) for _ in range(n)]


def prepare(fn, shape: Shape):
    """Warm `fn(i)` (i = input-set index) up and return one repetition: a graph of GRAPH_CALLS calls for
    small shapes, else one call."""
    calls = GRAPH_CALLS if shape.use_graph else 1
    for i in range(3):  # warm-up: module load, autotuning, allocator
        fn(i % calls)
    torch.cuda.synchronize()
    if not shape.use_graph:
        return lambda: fn(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(calls):
            fn(i)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    return graph.replay


def time_interleaved(runs: dict, shape: Shape, flush: torch.Tensor, budget_s: float) -> dict[str, list[float]]:
    """Per-call times in µs of each prepared repetition in `runs` (name -> (repetition, the context it
    runs in)), the L2 flushed before each.

    The implementations take turns: ROUNDS rounds, each timing every implementation for its share of
    repetitions, the order rotated from round to round. A drift of the GPU's clocks over the run
    (power, temperature) then reaches every implementation alike, and their ratios stay fair.
    """
    calls = GRAPH_CALLS if shape.use_graph else 1
    per_round = {}
    for name, (run, ctx) in runs.items():  # estimate one repetition to size the sample
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with ctx():
            start.record()
            run()
            end.record()
        torch.cuda.synchronize()
        est_s = max(start.elapsed_time(end) / 1e3, 1e-6)
        per_round[name] = -(-int(min(100, max(5, budget_s / est_s))) // ROUNDS)
    events: dict[str, list] = {name: [] for name in runs}
    names = list(runs)
    for r in range(ROUNDS):
        for name in names[r % len(names):] + names[: r % len(names)]:
            run, ctx = runs[name]
            with ctx():  # SDPA's backend choice holds while the call runs
                for _ in range(per_round[name]):
                    flush.zero_()
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    run()
                    e.record()
                    events[name].append((s, e))
        torch.cuda.synchronize()
    return {name: [s.elapsed_time(e) * 1e3 / calls for s, e in ev] for name, ev in events.items()}


def skipped(shape: Shape, name: str, exc: Exception) -> Row:
    msg = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
    return Row(shape.label, name, None, None, None, None, 0, f"skipped: {msg}")


def bench_shape(shape: Shape, impls: dict, flush: torch.Tensor, budget_s: float) -> list[Row]:
    fp16 = make_inputs(shape, GRAPH_CALLS if shape.use_graph else 1)
    by_dtype = {torch.float16: fp16, E4M3: [tuple(t.to(E4M3) for t in qkv) for qkv in fp16]}
    runs, rows = {}, {}
    for name, (fn, ctx, dtype) in impls.items():
        sets = by_dtype[dtype]
        try:
            with ctx():
                fn(*sets[0], shape.causal)  # raises here if the backend refuses the shape
                torch.cuda.synchronize()
                run = prepare(lambda i, fn=fn, sets=sets: fn(*sets[i], shape.causal), shape)
        except (RuntimeError, TypeError) as exc:
            rows[name] = skipped(shape, name, exc)
            continue
        runs[name] = (run, ctx)
    try:
        times = time_interleaved(runs, shape, flush, budget_s)
    except (RuntimeError, TypeError) as exc:  # a backend that accepted the first call but fails later
        return [skipped(shape, name, exc) if name in runs else rows[name] for name in impls]
    for name, t in times.items():
        q = statistics.quantiles(t, n=10)
        med = statistics.median(t)
        rows[name] = Row(shape.label, name, med, q[0], q[-1], shape.flops / (med * 1e-6) / 1e12, len(t))
    return [rows[name] for name in impls]


def implementations(configs: dict[str, list[str]]) -> dict:
    """Every kernel this GPU runs, plus each forced tile config in `configs` (kernel -> config names)."""
    from contextlib import nullcontext

    impls: dict = {}
    arch = flashcore_build.default_arch()
    for name in flashcore_build.kernels_for(arch):  # flashcore_wgmma only on sm_90
        mod = flashcore_build.load_kernel(name, arch)
        impls[name] = (lambda q, k, v, c, mod=mod: mod.forward(q, k, v, c), nullcontext, torch.float16)
        env = f"{name.upper()}_CONFIG"  # FLASHCORE_WMMA_CONFIG, FLASHCORE_WGMMA_CONFIG
        for cfg, dtype in [(c, torch.float16) for c in configs.get(name, [])] + [
                (c, E4M3) for c in configs.get(f"{name} e4m3", [])]:
            impls[f"{name}[{cfg}]{' e4m3' if dtype == E4M3 else ''}"] = (forced(mod, env, cfg), nullcontext, dtype)
        if name == "flashcore_wgmma":
            impls[f"{name} e4m3"] = (impls[name][0], nullcontext, E4M3)
    for name, backend in SDPA_BACKENDS.items():
        impls[name] = sdpa_impl(backend, torch.float16)
    impls["sdpa_cudnn e4m3"] = sdpa_impl(SDPBackend.CUDNN_ATTENTION, E4M3)
    return impls


def forced(mod, env: str, cfg: str):
    """`mod.forward` with tile config `cfg` forced through `env` (read by the launcher at each call)."""
    def call(q, k, v, causal):
        os.environ[env] = cfg
        try:
            return mod.forward(q, k, v, causal)
        finally:
            del os.environ[env]
    return call


def sdpa_impl(backend: SDPBackend, dtype: torch.dtype) -> tuple:
    """An implementations() entry: torch SDPA held to `backend`."""
    return (lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c),
            lambda: sdpa_kernel(backend), dtype)


def format_table(device: str, rows: list[Row]) -> str:
    lines = [f"FlashCore latency on {device} (fp16 unless e4m3, median of reps, L2 flushed; small shape via CUDA graphs)"]
    lines.append(f"{'shape':<26} {'impl':<36} {'median_us':>10} {'p10_us':>9} {'p90_us':>9} {'TFLOP/s':>8} {'reps':>5}")
    for r in rows:
        if r.median_us is None:
            lines.append(f"{r.shape:<26} {r.impl:<36} {r.note}")
        else:
            lines.append(
                f"{r.shape:<26} {r.impl:<36} {r.median_us:>10.2f} {r.p10_us:>9.2f} {r.p90_us:>9.2f} "
                f"{r.tflops:>8.1f} {r.reps:>5}"
            )
    return "\n".join(lines)


def ratio_lines(rows: list[Row]) -> list[str]:
    """Per shape: the fastest flashcore_wgmma row (launcher's choice or a forced config) against SDPA's
    cuDNN backend in the same run, fp16, and e4m3 where both ran."""
    lines = []
    for shape in dict.fromkeys(r.shape for r in rows):
        timed = [r for r in rows if r.shape == shape and r.median_us is not None]
        for suffix in ("", " e4m3"):
            ours = [r for r in timed if r.impl.startswith("flashcore_wgmma") and r.impl.endswith(suffix)
                    and (suffix or not r.impl.endswith(" e4m3"))]
            ref = [r for r in timed if r.impl == f"sdpa_cudnn{suffix}"]
            if ours and ref:
                best = min(ours, key=lambda r: r.median_us)
                lines.append(f"{shape + suffix:<32} {best.impl:<36} / sdpa_cudnn{suffix}: "
                             f"{best.median_us / ref[0].median_us:.3f}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description="FlashCore vs SDPA latency table")
    ap.add_argument("--json", type=Path, help="also write the table as JSON here")
    ap.add_argument("--budget-s", type=float, default=0.3, help="timed seconds per (shape, impl), roughly")
    ap.add_argument("--wmma-configs", default="", help="comma list of forced wmma tile configs to time too")
    ap.add_argument("--wgmma-configs", default="", help="comma list of forced wgmma tile configs to time too")
    ap.add_argument("--e4m3-configs", default="", help="comma list of forced wgmma tile configs to time with e4m3 inputs")
    ap.add_argument("--no-scalar", action="store_true", help="leave the slow scalar kernel out")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time", file=sys.stderr)
        return 2
    impls = implementations(
        {
            "flashcore_wmma": [c for c in args.wmma_configs.split(",") if c],
            "flashcore_wgmma": [c for c in args.wgmma_configs.split(",") if c],
            "flashcore_wgmma e4m3": [c for c in args.e4m3_configs.split(",") if c],
        }
    )
    if args.no_scalar:
        impls.pop("flashcore_scalar", None)
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows: list[Row] = []
    for shape in SHAPES:
        rows.extend(bench_shape(shape, impls, flush, args.budget_s))
    device = torch.cuda.get_device_name()
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "device": device,
                    "capability": list(torch.cuda.get_device_capability()),
                    "torch": torch.__version__,
                    "cuda": torch.version.cuda,
                    "rows": [asdict(r) for r in rows],
                },
                indent=2,
            )
        )
    print(format_table(device, rows))
    print("\nbest flashcore_wgmma / cuDNN, same run (median µs ratio; below 1: faster than cuDNN)")
    print("\n".join(ratio_lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
