"""flashcore_wgmma revisions side by side: each built as its own extension, timed in turns with SDPA's cuDNN.

The figures docs/kernels.md gives as "A/B in one process" come from this script. A kernel change that
moves a few percent is easy to lose between two device calls (clocks, host, cuDNN itself spread more
than that), so the revisions are built in one process and timed in one run, interleaved, by
`flashcore_latency.bench_shape` (rounds, order rotated, the L2 flushed before every call).

A revision is a directory holding `kernels/flashcore/` and `extension/` as some commit had them; `.` is
this checkout. Take one out of git where git is (the device machine gets the working tree only, so do
it before the call and carry `.carry`):

    mkdir -p .carry/ab/before && git archive 7a84641 kernels extension | tar -x -C .carry/ab/before
    python3 bench/kernel_ab.py .carry/ab/before . --configs c2n128p      # on the GPU machine

Each revision runs with its launcher's choice, and once more per `--configs` name, forced through
FLASHCORE_WGMMA_CONFIG. The long shapes of `flashcore_latency.SHAPES` only; fp16. Prints the table
and, per shape, each entry's median over cuDNN's. The builds run in parallel processes first.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "extension"))
ENV = "FLASHCORE_WGMMA_CONFIG"


def label(rev: Path) -> str:
    return "checkout" if rev.resolve() == BENCH.parent else rev.name


def sources(rev: Path) -> list[Path]:
    """The kernel and binding sources of revision `rev`; a folder without them is an error naming it."""
    root = rev.resolve()
    files = [root / "kernels/flashcore/wgmma.cu", root / "extension/flashcore_binding.cpp"]
    missing = [str(f.relative_to(root)) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"{rev}: not a FlashCore tree (no {', '.join(missing)})")
    return files


def build(rev: Path):
    """Build (or reuse) revision `rev`'s wgmma.cu with its binding; returns the module."""
    import flashcore_build

    kernel, binding = sources(rev)
    # One module name per source tree: two revisions cannot share an import name in one process.
    arch = flashcore_build.ARCH_SPECIFIC["flashcore_wgmma"][1]   # sm_90a
    name = f"flashcore_wgmma_ab_{flashcore_build.sources_digest(kernel, binding, arch)}"
    return flashcore_build.load_sources(name, kernel, binding, arch)


def _build_timed(rev: Path) -> float:
    t0 = time.perf_counter()
    build(rev)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description="flashcore_wgmma revisions timed in turns with cuDNN")
    ap.add_argument("revisions", nargs="+", type=Path, help="trees with kernels/flashcore and extension ('.': this one)")
    ap.add_argument("--configs", default="", help="comma list of tile configs to force on every revision too")
    ap.add_argument("--rounds", type=int, default=20, help="turns each entry takes per shape")
    ap.add_argument("--budget-s", type=float, default=0.3, help="timed seconds per (shape, entry), roughly")
    args = ap.parse_args()
    names = [label(r) for r in args.revisions]
    if len(set(names)) != len(names):
        raise SystemExit(f"two revisions share a name: {', '.join(names)} (name their folders apart)")
    for rev in args.revisions:
        sources(rev)

    import torch
    from torch.nn.attention import SDPBackend

    import flashcore_latency as fl

    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        print("flashcore_wgmma needs an sm_90 GPU: nothing to time", file=sys.stderr)
        return 2
    # The compiles, in parallel; spawned, not forked, since this process has touched CUDA.
    with ProcessPoolExecutor(len(args.revisions), mp_context=multiprocessing.get_context("spawn")) as pool:
        for name, seconds in zip(names, pool.map(_build_timed, args.revisions)):
            print(f"built {name} in {seconds:.0f} s", flush=True)
    impls = {}
    for name, rev in zip(names, args.revisions):
        mod = build(rev)   # the extension just built: loaded, not compiled again
        impls[name] = (mod.forward, nullcontext, torch.float16)
        for cfg in [c for c in args.configs.split(",") if c]:
            impls[f"{name}:{cfg}"] = (fl.forced(mod, ENV, cfg), nullcontext, torch.float16)
    impls["sdpa_cudnn"] = fl.sdpa_impl(SDPBackend.CUDNN_ATTENTION, torch.float16)
    fl.ROUNDS = args.rounds
    flush = torch.empty(fl.FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    rows = []
    for shape in [s for s in fl.SHAPES if not s.use_graph]:
        rows += fl.bench_shape(shape, impls, flush, args.budget_s)
    print(fl.format_table(torch.cuda.get_device_name(), rows))
    print("\nmedian / cuDNN's, same run")
    for shape in dict.fromkeys(r.shape for r in rows):
        here = {r.impl: r.median_us for r in rows if r.shape == shape and r.median_us is not None}
        ref = here.pop("sdpa_cudnn", None)
        print(f"{shape:<26} " + ("  ".join(f"{k}={v / ref:.3f}" for k, v in here.items()) if ref else "cuDNN did not run"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
