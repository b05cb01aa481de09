"""Why one binary read 457-460 µs timed alone and 588-606 µs interleaved with a second build of itself
(issue 14: 2048 x 2048 x 1024 fp16 WMMA GEMM on an H200). One device call, under 5 minutes:

    python3 bench/timing_drift.py            # table on stdout, JSON to $OUT/timing_drift.json

It times the same kernels under one factor changed at a time, with the gate's own pieces (its L2
flush buffer, its workloads, its build), in a loop that mirrors `gate/timing/gpu_timing.py`:
per round a shuffled order of sides, per repetition `flush, start event, call, end event`, one input
set per round rotating over `INPUT_SETS` sets, each refilled right after its round; graphs of
back-to-back launches cycling over the sets for the graph method. The reference row is A/A with
events; every other row changes one thing:

    alone                      the kernel is the only gated side (a new kernel)
    alone+peer, graph          what the gate did for a new kernel before the fix: the peer (cuBLAS,
                               ~15 µs) was fast enough to choose graph timing for everyone, and a
                               graph's launches after the first run from a warm L2
    vs other kernel            interleaved with a different kernel (cuBLAS) instead of itself
    no L2 flush / inputs per side / 1 or 8 input sets / outputs kept (no allocator reuse) /
    spaced (2 ms idle between calls) / graph
    idle gap                   the staged GEMM (and the FMA chain, DRAM- and compute-bound) with each call
                               waited for and the GPU left idle 0 to 5 ms before the next, and after a
                               2 ms gap a one-thread spin or ~150 µs of work on every SM before the call
    small A/A graph: own pools vs shared pool   the A/A bias at the ~30 µs shape (512 x 512 x 256):
                               graph timing captures each side into its own memory pool, so the two
                               builds write their outputs to different addresses; a shared pool gives
                               them the same ones (ratio B/A over many rounds)

Subjects: the WMMA GEMM of the gate's own samples (tests/samples/wmma_gemm, loads its fragments
straight from global memory, so it is L2-bound like the issue's kernel); the same GEMM with C staged
through shared memory and written column-wise (the sample's `bank_conflicts` variant: a shared-memory
WMMA GEMM whose global stores are partial sectors, so L2 state matters to its writes as well); the
sample's last version with A and B staged through padded shared memory (the `smem_staged` variant,
the shared-memory GEMM of the issue's time), at 2048 x 2048 x 1024 and 2048^3; and the FMA chain of
bench/quality_repo (compute-bound: the control, which should not move).

What to look for: if `alone+peer, graph` reads like the issue's 457 µs and every events row reads like
A/A (~600 µs), the method choice was the cause (fixed in `timing_methods.timing_method`: only the gated
sides choose). If `no L2 flush` also reads fast, it is the L2 state a graph keeps warm; if `spaced`
moves, it is clocks/power; `inputs per side`, `outputs kept` and the pool rows point at placement.
Found on an H100: the peer-chosen graph reads 1 to 5 % fast; an idle GPU before each call, 1.32 to 1.38 x
slow from 0.5 ms of idle on (the `idle gap` rows), which ~150 µs of work on every SM takes away.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate.checking import workloads  # noqa: E402
from gate.compiling import build  # noqa: E402
from gate.domain import Shape  # noqa: E402
from gate.manifest.load import load_manifest  # noqa: E402
from gate.timing.gpu_timing import InterleavedTimer  # noqa: E402
from gate.timing.timing_methods import timing_method  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GEMM_REPO = ROOT / "tests" / "samples" / "wmma_gemm"
FMA_REPO = ROOT / "bench" / "quality_repo"
ROUNDS = int(os.environ.get("GATE_DRIFT_ROUNDS", "200"))
BIAS_ROUNDS = int(os.environ.get("GATE_DRIFT_BIAS_ROUNDS", "4000"))
INPUT_SETS = 3


def build_copy(src: Path, work: Path, cache: Path, tag: str, kernel: str, variant: str | None = None):
    """A separate checkout and .so of `src` (two builds of one source: a true A/A); `variant` names a
    change of tests/samples/build.py applied to the WMMA sample's kernel."""
    dest = work / f"{src.name}-{tag}"
    shutil.copytree(src, dest)
    if variant:
        from tests.samples.build import KERNEL_FILE, apply_variant

        path = dest / KERNEL_FILE
        path.write_text(apply_variant(path.read_text(encoding="utf-8"), variant), encoding="utf-8")
    spec = load_manifest(dest).kernel(kernel) if (dest / "gate.toml").exists() else None
    if spec is None:   # bench/quality_repo has no gate.toml: the spec gate_quality.py uses
        sys.path.insert(0, str(ROOT / "bench"))
        from gate_quality import kernel_spec

        spec = kernel_spec([Shape({"n": 4 * 2**20, "iters": 2000})])
    res = build.build_extension(spec, dest, cache, dest / "_build")
    if res.status.value != "passed":
        raise SystemExit(f"build of {dest} failed: {res.reason}\n{res.log[-3000:]}")
    return spec, dest, build.load_module(res.module_path)


def time_sides(timer, wl, shape, dtype, sides, *, rounds=ROUNDS, flush=True, input_sets=INPUT_SETS,
               per_side_inputs=False, keep_outputs=False, spaced_ms=None, graph=False, shared_pool=False,
               launches=None, before=None):
    """Median µs per side label. `sides`: [(label, module)] called through `wl.call(module, 'forward', inputs)`;
    `launches` per graph replay, or (None) as the gate chooses them; `spaced_ms`: wait for each call and
    leave the GPU idle that long after it; `before()`: GPU work enqueued before each call's L2 flush."""
    import torch

    n_sets = len(sides) if per_side_inputs else 1
    sets = [[wl.make_inputs(shape, dtype, random.getrandbits(31), "cuda") for _ in range(input_sets)]
            for _ in range(n_sets)]

    def inputs(side_index, set_index):
        return sets[side_index if per_side_inputs else 0][set_index]

    fns = [(label, (lambda i, m=module, s=k: wl.call(m, "forward", inputs(s, i)))) for k, (label, module)
           in enumerate(sides)]
    for _, fn in fns:                                  # warm-up
        for i in range(3):
            fn(i % input_sets)
    graphs = {}
    if not graph:
        launches = 1
    elif launches is None:
        launches = timing_method([timer.estimate_us(fn) for _, fn in fns])[1]
    if graph:
        pool = torch.cuda.graph_pool_handle() if shared_pool else None
        for label, fn in fns:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                for i in range(launches):
                    fn(i % input_sets)
            g.replay()
            graphs[label] = g
        torch.cuda.synchronize()
    samples = {label: [] for label, _ in fns}
    kept = []
    pending = []
    rng = random.Random(14)
    for r in range(rounds):
        order = fns[:]
        rng.shuffle(order)
        current = r % input_sets
        for label, fn in order:
            if before:
                before()
            if flush:
                timer.flush_l2()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            if graph:
                graphs[label].replay()
            else:
                out = fn(current)
                if keep_outputs:
                    kept.append(out)
            end.record()
            pending.append((label, start, end))
            if spaced_ms is not None:
                end.synchronize()
                time.sleep(spaced_ms / 1000)
        for s in range(n_sets):
            wl.refill(sets[s][current], random.getrandbits(31))
        if len(pending) >= 64 * len(fns):
            pending[-1][2].synchronize()
            for label, start, end in pending:
                samples[label].append(start.elapsed_time(end) * 1e3 / launches)
            pending.clear()
            kept.clear()
    torch.cuda.synchronize()
    for label, start, end in pending:
        samples[label].append(start.elapsed_time(end) * 1e3 / launches)
    return {label: statistics.median(v) for label, v in samples.items()}


def main() -> int:
    import torch

    out = Path(os.environ.get("OUT", "."))
    work = Path(tempfile.mkdtemp(prefix="gate-drift-"))
    cache = work / "cache"
    t0 = time.perf_counter()
    timer = InterleavedTimer(seed=14)
    rows: list[dict] = []

    def row(subject, arrangement, medians, subject_label="A"):
        value = medians[subject_label]
        rows.append({"subject": subject, "arrangement": arrangement, "median_us": value, "all": medians})
        print(f"{subject:<26} {arrangement:<34} {value:9.2f} us   {json.dumps({k: round(v, 2) for k, v in medians.items()})}",
              flush=True)

    # --- the kernel: a WMMA GEMM at 2048 x 2048 x 1024 fp16 -----------------------------
    gemm = workloads.Gemm()
    cublas = SimpleNamespace(forward=lambda a, b: torch.matmul(a, b.T))
    big = Shape({"m": 2048, "n": 2048, "k": 1024})

    def gemm_rows(name, a, b, *, every_factor, shape=big):
        ts = lambda sides, **kw: time_sides(timer, gemm, shape, "float16", sides, **kw)  # noqa: E731
        aa = [("A", a), ("A'", b)]
        row(name, "A/A, events (reference)", ts(aa))
        row(name, "alone, events (the gate now)", ts([("A", a)]))
        row(name, "alone+peer, graph (before the fix)", ts([("A", a), ("cublas", cublas)], graph=True))
        row(name, "vs other kernel (cuBLAS), events", ts([("A", a), ("cublas", cublas)]))
        row(name, "A/A, no L2 flush", ts(aa, flush=False))
        if every_factor:
            row(name, "A/A, inputs per side", ts(aa, per_side_inputs=True))
            row(name, "A/A, 1 input set", ts(aa, input_sets=1))
            row(name, "A/A, 8 input sets", ts(aa, input_sets=8))
            row(name, "A/A, outputs kept (no reuse)", ts(aa, keep_outputs=True))
        row(name, "A/A, spaced 2 ms", ts(aa, spaced_ms=2.0, rounds=min(ROUNDS, 100)))
        row(name, "A/A, graph", ts(aa, graph=True))
        row(name, "alone, graph", ts([("A", a)], graph=True))

    _, _, gemm_a = build_copy(GEMM_REPO, work, cache, "a", "wmma_gemm")
    _, _, gemm_b = build_copy(GEMM_REPO, work, cache, "b", "wmma_gemm")
    # The same GEMM with C staged through unpadded shared memory and written column-wise (the
    # sample's `bank_conflicts` variant): a shared-memory WMMA GEMM whose stores are partial sectors.
    _, _, smem_a = build_copy(GEMM_REPO, work, cache, "smem-a", "wmma_gemm", variant="bank_conflicts")
    _, _, smem_b = build_copy(GEMM_REPO, work, cache, "smem-b", "wmma_gemm", variant="bank_conflicts")
    # The sample's last shared-memory version (A and B staged through padded shared memory), at the
    # issue's shape and at 2048^3, the sample's largest shape.
    _, _, staged_a = build_copy(GEMM_REPO, work, cache, "staged-a", "wmma_gemm", variant="smem_staged")
    _, _, staged_b = build_copy(GEMM_REPO, work, cache, "staged-b", "wmma_gemm", variant="smem_staged")
    print(f"builds: {time.perf_counter() - t0:.0f} s", flush=True)
    gemm_rows("wmma gemm 2048x2048x1024", gemm_a, gemm_b, every_factor=True)
    gemm_rows("wmma gemm, C via smem", smem_a, smem_b, every_factor=False)
    gemm_rows("staged gemm 2048x2048x1024", staged_a, staged_b, every_factor=True)
    gemm_rows("staged gemm 2048^3", staged_a, staged_b, every_factor=False,
              shape=Shape({"m": 2048, "n": 2048, "k": 2048}))

    # --- the A/A bias at the ~30 µs shape: graph pools --------------------------------------------
    small = Shape({"m": 512, "n": 512, "k": 256})
    sname = "wmma gemm 512x512x256"
    aa = [("A", gemm_a), ("A'", gemm_b)]
    for label, kw in (("A/A graph, own pools", {}), ("A/A graph, shared pool", {"shared_pool": True}),
                      ("A/A events", {"graph": False})):
        kw = {"graph": True, **kw}
        m = time_sides(timer, gemm, small, "float16", aa, rounds=BIAS_ROUNDS, **kw)
        ratio = m["A'"] / m["A"]
        rows.append({"subject": sname, "arrangement": label, "median_us": m["A"], "all": m,
                     "ratio_b_over_a": ratio})
        print(f"{sname:<26} {label:<34} {m['A']:9.3f} us   A'/A {ratio:.5f}", flush=True)

    # --- the control: a compute-bound FMA chain -------------------------------------------------
    _, _, fma_a = build_copy(FMA_REPO, work, cache, "a", "fma_chain")
    _, _, fma_b = build_copy(FMA_REPO, work, cache, "b", "fma_chain")
    sys.path.insert(0, str(work / "quality_repo-a"))
    import quality_workload

    fwl = quality_workload.make()
    fshape = Shape({"n": 4 * 2**20, "iters": 2000})
    fname = "fma chain 4M x 2000"
    fts = lambda sides, **kw: time_sides(timer, fwl, fshape, "float32", sides, **kw)  # noqa: E731
    faa = [("A", fma_a), ("A'", fma_b)]
    row(fname, "A/A, events (reference)", fts(faa))
    row(fname, "alone, events", fts([("A", fma_a)]))
    row(fname, "alone, graph", fts([("A", fma_a)], graph=True))
    row(fname, "A/A, no L2 flush", fts(faa, flush=False))

    # --- launches per graph replay, at the ~15 µs shape of the cross-job spread -------------------
    # One "alone" job in five read 1.7 % slower there: does the per-call figure follow the launch
    # count, which came from a noisy estimate (ceil(200 µs / estimate)) before it became a power of 2?
    lshape = Shape({"n": 128 * 2**10, "iters": 2400})
    lname = "fma chain 128K x 2400"
    for n in (4, 8, 10, 13, 16, 32):
        row(lname, f"alone, graph of {n} launches",
            time_sides(timer, fwl, lshape, "float32", [("A", fma_a)], graph=True, launches=n))

    # --- what an idle GPU costs the next call ----------------------------------------------------
    # A 2 ms gap between calls made every GEMM 23-31 µs slower per call (x1.37 at 84 µs). How does the
    # cost grow with the gap, and what before the call takes it away: a one-thread spin keeps the GPU
    # busy with its SMs idle, the FMA chain keeps every SM busy for ~150 µs?
    gname = "idle gap: staged gemm"
    gts = lambda sides, **kw: time_sides(timer, gemm, big, "float16", sides, rounds=100, **kw)  # noqa: E731
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.cuda._sleep(10**6)
    e.record()
    e.synchronize()
    cycles_per_us = 10**6 / (s.elapsed_time(e) * 1e3)   # the spin's clock, measured
    spin = fwl.make_inputs(Shape({"n": 4 * 2**20, "iters": 1000}), "float32", 3, "cuda")
    warm_all_sms = lambda: fwl.call(fma_a, "forward", spin)  # noqa: E731
    row(gname, "back-to-back (no wait)", gts([("A", staged_a)]))
    for gap in (0.0, 0.02, 0.1, 0.5, 1.0, 2.0, 5.0):
        row(gname, f"waited, then idle {gap:g} ms", gts([("A", staged_a)], spaced_ms=gap))
    row(gname, "idle 2 ms, 1-thread spin 200 us", gts([("A", staged_a)], spaced_ms=2.0,
                                                      before=lambda: torch.cuda._sleep(int(200 * cycles_per_us))))
    row(gname, "idle 2 ms, all SMs busy ~150 us", gts([("A", staged_a)], spaced_ms=2.0, before=warm_all_sms))
    dram = Shape({"n": 32 * 2**20, "iters": 1})
    dname = "idle gap: fma 32M x 1 (DRAM)"
    for gap in (None, 0.0, 2.0):
        label = "back-to-back (no wait)" if gap is None else f"waited, then idle {gap:g} ms"
        row(dname, label, time_sides(timer, fwl, dram, "float32", [("A", fma_a)], rounds=100, spaced_ms=gap))
    row("idle gap: fma 4M x 2000", "waited, then idle 2 ms",
        time_sides(timer, fwl, fshape, "float32", [("A", fma_a)], rounds=100, spaced_ms=2.0))

    linputs = fwl.make_inputs(lshape, "float32", 7, "cuda")
    estimates = [timer.estimate_us(lambda i: fwl.call(fma_a, "forward", linputs)) for _ in range(10)]
    rows.append({"subject": lname, "arrangement": "10 estimates (events, one call)", "median_us": min(estimates),
                 "all": {"estimates_us": estimates}})
    print(f"{lname:<26} estimates {', '.join(f'{e:.1f}' for e in estimates)} us", flush=True)
    elapsed = time.perf_counter() - t0
    report = {"device": torch.cuda.get_device_name(), "rounds": ROUNDS, "elapsed_s": elapsed, "rows": rows}
    (out / "timing_drift.json").write_text(json.dumps(report, indent=1))
    print(f"\n== timing drift on {report['device']} ({ROUNDS} rounds per row, {elapsed:.0f} s)")
    ref = {}
    for r in rows:
        ref.setdefault(r["subject"], r["median_us"])
        extra = f"  A'/A {r['ratio_b_over_a']:.5f}" if "ratio_b_over_a" in r else ""
        print(f"{r['subject']:<26} {r['arrangement']:<34} {r['median_us']:9.2f} us  "
              f"x{r['median_us'] / ref[r['subject']]:.3f} of the first row{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
