"""How good is the gate itself? Run on a GPU machine: `python3 bench/gate_quality.py` (JSON to $OUT).

Subject: `bench/quality_repo`, a dependent FMA chain per element behind a torch binding, whose
variants change only `GATE_EXTRA_PCT` (more arithmetic, identical memory traffic and layout), at a
~300 µs size and a ~10 µs size (launch-bound: timed as CUDA graphs). Prints, in one run:

  1. cold and warm verdict time for one kernel on 3 shapes through the real pipeline (`gate_job`:
     git checkout, the GPU child, static, build of both sides, correctness, bench, profile, verdict);
     cold = empty data dir and object cache, warm = a kernel-only commit with the binding cached;
  2. A/A false alarms over TRIALS trials (two builds of the same source) at both sizes, and the same
     for PyTorch SDPA at B1 H8 S512 D64 (~10 µs), beside naive A-then-B event timing of it;
  3. detections of the +3 % variant at both sizes, and a sweep of slowdowns at the small size;
  4. the profile stage's time beside the rest of the warm verdict.

A trial is one `bench.time_revisions` call; "alarm"/"detected" = `stats.regression_call` says
REGRESSION at the threshold named in the table (whole 95 % interval above 1 + threshold, p < 0.05).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate.domain import Gates, KernelSpec, Shape  # noqa: E402
from gate.domain.codec import to_json  # noqa: E402
from gate.domain.job import RunOptions  # noqa: E402
from gate.pipeline import bench, build, stats, workloads  # noqa: E402

TRIALS = int(os.environ.get("GATE_QUALITY_TRIALS", "20"))
THRESHOLDS_PCT = (1.0, 2.0)
SUBJECT = Path(__file__).resolve().parent / "quality_repo"
LARGE = Shape({"n": 4 * 2**20, "iters": 2000})     # ~300 µs on an H100
SMALL = Shape({"n": 128 * 2**10, "iters": 2400})   # ~10 µs: one wave, latency-bound
VERDICT_SHAPES = [SMALL, Shape({"n": 2**20, "iters": 2000}), LARGE]


def kernel_spec(shapes: list[Shape]) -> KernelSpec:
    return KernelSpec(name="fma_chain", sources=["kernels/fma_chain.cu", "extension/fma_binding.cpp"],
                      workload="quality_workload:make", arch=["sm_90"], shapes=shapes, dtypes=["float32"],
                      gates=Gates(max_latency_regression_pct=THRESHOLDS_PCT[0], max_error_ratio=16.0))


def variant(work: Path, extra_pct: int, tag: str = "") -> Path:
    """A checkout of the subject with GATE_EXTRA_PCT = extra_pct."""
    dest = work / f"rev-{extra_pct}{tag}"
    if not dest.exists():
        shutil.copytree(SUBJECT, dest)
        cu = dest / "kernels" / "fma_chain.cu"
        cu.write_text(cu.read_text().replace("#define GATE_EXTRA_PCT 0", f"#define GATE_EXTRA_PCT {extra_pct}"))
    return dest


def built(work: Path, cache: Path, extra_pct: int, tag: str = "") -> tuple[object, object]:
    src = variant(work, extra_pct, tag)
    res = build.build_extension(kernel_spec(VERDICT_SHAPES), src, cache, src / "_build")
    if res.status.value != "passed":
        raise SystemExit(f"build failed: {res.reason}\n{res.log}")
    return res, build.load_module(res.module_path)


MANIFEST = """\
[[kernel]]
name = "fma_chain"
sources = ["kernels/fma_chain.cu", "extension/fma_binding.cpp"]
workload = "quality_workload:make"
arch = ["sm_90"]
shapes = [{shapes}]
dtypes = ["float32"]

[kernel.gates]
max_latency_regression_pct = 1
max_bank_conflict_pct = 10
max_error_ratio = 16.0
"""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "gate", "GIT_AUTHOR_EMAIL": "gate@example.com",
           "GIT_COMMITTER_NAME": "gate", "GIT_COMMITTER_EMAIL": "gate@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def subject_repo(work: Path) -> tuple[Path, dict[int, str]]:
    """The subject as a git repository with a gate.toml: the base commit, then +3 % and +5 % commits."""
    repo = work / "subject-repo"
    shutil.copytree(SUBJECT, repo)
    shapes = ", ".join("{" + ", ".join(f"{k} = {v}" for k, v in sh.params.items()) + "}" for sh in VERDICT_SHAPES)
    (repo / "gate.toml").write_text(MANIFEST.format(shapes=shapes))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    shas = {0: _git(repo, "rev-parse", "HEAD")}
    cu = repo / "kernels" / "fma_chain.cu"
    for pct in (3, 5):
        cu.write_text(re.sub(r"#define GATE_EXTRA_PCT \d+", f"#define GATE_EXTRA_PCT {pct}", cu.read_text()))
        _git(repo, "commit", "-q", "-am", f"+{pct} % arithmetic")
        shas[pct] = _git(repo, "rev-parse", "HEAD")
    return repo, shas


def verdict_time(data_dir: Path, repo: Path, sha: str, base: str, label: str) -> dict:
    """One whole verdict through `gate_job`, as the service runs it; seconds in all and per stage."""
    from gate.executors.job import gate_job
    from gate.sources.mirror import Mirror

    options = RunOptions(ncu_path=shutil.which("ncu") or "/usr/local/cuda/bin/ncu", ncu_clock_control="none",
                         build_cache_dir=str(data_dir / "build-cache"), bench_budget_s=5.0)
    t0 = time.perf_counter()
    outcome = gate_job(repo=str(repo), sha=sha, base_sha=base, kernel="fma_chain", data_dir=data_dir,
                       options=options, mirror=Mirror(data_dir / "mirrors"))
    total = time.perf_counter() - t0
    res = outcome.result
    sides = [("candidate", res.candidate), ("baseline", res.baseline)]
    stages = {f"{stage}_{side}": getattr(getattr(r, stage), "duration_s", 0.0)
              for side, r in sides if r is not None for stage in ("static", "build", "correctness", "profile")
              if getattr(r, stage, None) is not None}
    stages["bench"] = res.bench.duration_s if res.bench else 0.0
    build_c = res.candidate.build
    return {"label": label, "total_s": total, "verdict": outcome.report.verdict.value,
            "reason": outcome.report.reason, "stages_s": stages,
            "profile_s": stages.get("profile_candidate", 0.0) + stages.get("profile_baseline", 0.0),
            "cand_cache": [build_c.cache_hits, build_c.cache_misses] if build_c else None,
            "ratios": [round(t.ratio or 0, 4) for t in (res.bench.shapes if res.bench else [])],
            # "... integrity figures in X s": the cost of the all-streams check and the floor (issue 10)
            "bench_reason": res.bench.reason if res.bench else ""}


def trials(spec: KernelSpec, wl: object, cand: object, base: object, n: int) -> dict:
    rows = []
    for _ in range(n):
        res = bench.time_revisions(spec, wl, cand, base, RunOptions(bench_budget_s=1.0, max_reruns=1))
        s = res.shapes[0]
        comp = stats.Comparison(s.ratio, s.ratio_ci_low, s.ratio_ci_high, s.p_value)
        rows.append({"ratio": s.ratio, "ci": [s.ratio_ci_low, s.ratio_ci_high], "p": s.p_value,
                     "rounds": s.rounds, "method": s.method, "attempts": res.attempts,
                     "cand_median_us": s.candidate.median_us,
                     "calls": {str(t): stats.regression_call(comp, t).value for t in THRESHOLDS_PCT}})
    counts = {str(t): sum(r["calls"][str(t)] == "regression" for r in rows) for t in THRESHOLDS_PCT}
    ratios = sorted(r["ratio"] for r in rows)
    return {"trials": n, "regressions": counts, "median_ratio": ratios[len(ratios) // 2],
            "median_us": sorted(r["cand_median_us"] for r in rows)[n // 2], "method": rows[0]["method"],
            "rows": rows}


def naive_ab(fn_a, fn_b, reps: int = 200) -> float:
    """A then B, events, no flush, no shuffling, no graph: median(B) / median(A)."""
    import torch

    for _ in range(10):
        fn_a(), fn_b()
    ev = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(reps)]
    for e in ev:
        e[0].record(); fn_a(); e[1].record(); e[2].record(); fn_b(); e[3].record()  # noqa: E702
    torch.cuda.synchronize()
    a = sorted(e[0].elapsed_time(e[1]) for e in ev)
    b = sorted(e[2].elapsed_time(e[3]) for e in ev)
    return b[reps // 2] / a[reps // 2]


def main() -> int:
    import torch
    import torch.nn.functional as F

    out = Path(os.environ.get("OUT", "."))
    work = Path(tempfile.mkdtemp(prefix="gate-quality-"))
    cache = work / "cache"
    report: dict = {"device": torch.cuda.get_device_name(), "trials": TRIALS}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda')"], check=True)
    report["python_torch_start_s"] = time.perf_counter() - t

    repo, shas = subject_repo(work)
    data_dir = work / "data"
    report["cold"] = verdict_time(data_dir, repo, shas[3], shas[0], "cold (empty cache)")
    report["warm"] = verdict_time(data_dir, repo, shas[5], shas[0], "warm (kernel-only change)")
    print("verdict times:", json.dumps({k: report[k] for k in ("cold", "warm")}, default=str), flush=True)

    sizes = {"large": LARGE, "small": SMALL}
    for size, shape in sizes.items():
        spec = kernel_spec([shape])
        wl = workloads.get_workload(spec, SUBJECT)
        _, a = built(work, cache, 0)
        _, a2 = built(work, cache, 0, tag="-copy")       # same source, its own .so: a true A/A
        report[f"aa_{size}"] = trials(spec, wl, a, a2, TRIALS)
        _, slow3 = built(work, cache, 3)
        report[f"det3_{size}"] = trials(spec, wl, slow3, a, TRIALS)
        print(size, "A/A", report[f"aa_{size}"]["regressions"], "det3", report[f"det3_{size}"]["regressions"],
              flush=True)
    spec = kernel_spec([SMALL])
    wl = workloads.get_workload(spec, SUBJECT)
    _, a = built(work, cache, 0)
    for pct in (5, 8, 12):
        _, slow = built(work, cache, pct)
        report[f"det{pct}_small"] = trials(spec, wl, slow, a, TRIALS)

    sdpa_shape = Shape({"b": 1, "h": 8, "s": 512, "d": 64, "causal": False})
    sdpa_spec = KernelSpec(name="sdpa", sources=[], workload="attention", shapes=[sdpa_shape],
                           gates=Gates(max_latency_regression_pct=1.0))
    att = workloads.get_workload(sdpa_spec, SUBJECT)
    mod_a = SimpleNamespace(forward=lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c))
    mod_b = SimpleNamespace(forward=lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c))
    report["aa_sdpa"] = trials(sdpa_spec, att, mod_a, mod_b, TRIALS)
    inputs = att.make_inputs(sdpa_shape, "float16", 1, "cuda")
    naive = [naive_ab(lambda: att.call(mod_a, "forward", inputs), lambda: att.call(mod_b, "forward", inputs))
             for _ in range(TRIALS)]
    report["naive_sdpa"] = {"ratios": naive, "b_slower_gt_1pct": sum(r > 1.01 for r in naive)}

    (out / "gate_quality.json").write_text(json.dumps(to_json(report), indent=1, default=str))
    _table(report)
    return 0


def _table(r: dict) -> None:
    t1 = f"{THRESHOLDS_PCT[0]:g}"
    print(f"\n== gate quality on {r['device']} ({r['trials']} trials each; alarm = regression at +{t1} % "
          f"[at +{THRESHOLDS_PCT[1]:g} %])")
    for key in ("cold", "warm"):
        v = r[key]
        print(f"{v['label']:<28} {v['total_s']:6.1f} s  verdict {v['verdict']} (ratios {v['ratios']}); "
              f"candidate build hits/misses {v['cand_cache']}")
    w = r["warm"]
    print(f"{'profile stage (warm)':<28} {w['profile_s']:6.1f} s of {w['total_s']:.1f} s "
          f"(the rest of the verdict: {w['total_s'] - w['profile_s']:.1f} s)")
    for key, label in (("aa_large", "A/A ~300 us"), ("aa_small", "A/A ~10 us"), ("aa_sdpa", "A/A SDPA 10 us"),
                       ("det3_large", "+3 % ~300 us"), ("det3_small", "+3 % ~10 us"), ("det5_small", "+5 % ~10 us"),
                       ("det8_small", "+8 % ~10 us"), ("det12_small", "+12 % ~10 us")):
        v = r[key]
        regs = v["regressions"]
        print(f"{label:<16} median {v['median_us']:8.2f} us  ratio {v['median_ratio']:.4f}  "
              f"regressions {regs[str(THRESHOLDS_PCT[0])]:>2}/{v['trials']} "
              f"[{regs[str(THRESHOLDS_PCT[1])]:>2}/{v['trials']}]  ({v['method']})")
    n = r["naive_sdpa"]
    print(f"{'naive A-then-B SDPA':<16} B slower by > 1 % in {n['b_slower_gt_1pct']}/{len(n['ratios'])} trials, "
          f"median B/A {sorted(n['ratios'])[len(n['ratios']) // 2]:.4f}")


if __name__ == "__main__":
    sys.exit(main())
