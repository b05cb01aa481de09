"""How good is the gate itself? Run on a GPU machine: `python3 bench/gate_quality.py [SECTION...]`
(JSON to $OUT). Sections (default all; also GATE_QUALITY_SECTIONS=aa,det): verdict, aa, det, sdpa,
spread; each fits one device call of under ~8 minutes on an H100.

Subject: `bench/quality_repo`, a dependent FMA chain per element behind a torch binding, whose
variants change only `GATE_EXTRA_PCT` (more arithmetic, identical memory traffic and layout), at a
~300 µs size and a ~10 µs size (launch-bound: timed as CUDA graphs). Prints, in one run:

  1. cold and warm verdict time for one kernel on 3 shapes through the real pipeline (`gate_job`:
     git checkout, the GPU child, static, build of both sides, correctness, bench, profile, verdict);
     cold = empty data dir and object cache, first without precompiled torch headers, then with them
     made beforehand (`gate pch`, as serve, worker and demo do when they start; its time is printed), warm = the next kernel-only commit with the binding
     cached, against the cold job's candidate (whose profile it takes: docs/reuse.md), 10 s later,
     its GPU child started when the cold job's ended (a spare, as the service's executor keeps one);
     then the same kind of commit with the child started by the job itself, as `gate run` does;
  2. A/A false alarms over TRIALS trials (two builds of the same source) at both sizes, and the same
     for PyTorch SDPA at B1 H8 S512 D64 (~10 µs), beside naive A-then-B event timing of it;
  3. detections of the +3 % variant at both sizes, and a sweep of slowdowns at the small size;
  4. the profile stage's time beside the rest of the warm verdict;
  5. (aa) the A/A bias over those trials at both sizes: mean and median shift of the ratio, and the
     trials with a significant shift beyond +-0.2 % in either direction;
  6. (spread) the cross-job spread: the same revision gated in GATE_SPREAD_JOBS (5) separate jobs
     (`gate_job`, each its own GPU child process, as the service runs them) alone (new kernel),
     against its A/A copy and against the +5 % variant; max/min of its median per arrangement, at
     both sizes and at a DRAM-bound size (one FMA per element: a memory-bound kernel's median moved
     5 % between two jobs of causal-conv1d while the FMA chain held within 0.33 %).

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

from gate.checking import workloads  # noqa: E402
from gate.compiling import build  # noqa: E402
from gate.domain import Gates, KernelSpec, Shape  # noqa: E402
from gate.domain.codec import to_json  # noqa: E402
from gate.domain.job import RunOptions  # noqa: E402
from gate.timing import bench, stats  # noqa: E402

TRIALS = int(os.environ.get("GATE_QUALITY_TRIALS", "20"))
THRESHOLDS_PCT = (1.0, 2.0)
SUBJECT = Path(__file__).resolve().parent / "quality_repo"
LARGE = Shape({"n": 4 * 2**20, "iters": 2000})     # ~300 µs on an H100
SMALL = Shape({"n": 128 * 2**10, "iters": 2400})   # ~10 µs: one wave, latency-bound
MEMORY = Shape({"n": 32 * 2**20, "iters": 1})       # ~120 µs on an H100: one FMA per element, DRAM-bound (spread)
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


MANIFEST = (SUBJECT / "gate.toml.in").read_text()


def subject_manifest(shapes: list[Shape], workload: str = "quality_workload:make") -> str:
    """The subject's gate.toml for these shapes: the latency gate and a bank-conflict rule."""
    text = MANIFEST.format(shapes=", ".join(sh.toml for sh in shapes), more_gates="max_bank_conflict_pct = 10")
    return text.replace("quality_workload:make", workload)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "gate", "GIT_AUTHOR_EMAIL": "gate@example.com",
           "GIT_COMMITTER_NAME": "gate", "GIT_COMMITTER_EMAIL": "gate@example.com"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def subject_repo(work: Path) -> tuple[Path, dict[int, str]]:
    """The subject as a git repository with a gate.toml: the base commit, then +3 % and +5 % commits."""
    repo = work / "subject-repo"
    shutil.copytree(SUBJECT, repo)
    (repo / "gate.toml").write_text(subject_manifest(VERDICT_SHAPES))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    shas = {0: _git(repo, "rev-parse", "HEAD")}
    cu = repo / "kernels" / "fma_chain.cu"
    for pct in (3, 5, 4):
        cu.write_text(re.sub(r"#define GATE_EXTRA_PCT \d+", f"#define GATE_EXTRA_PCT {pct}", cu.read_text()))
        _git(repo, "commit", "-q", "-am", f"+{pct} % arithmetic")
        shas[pct] = _git(repo, "rev-parse", "HEAD")
    return repo, shas


def verdict_time(data_dir: Path, repo: Path, sha: str, base: str, label: str, history: list,
                 spares: object = None, pch_dir: Path | None = None) -> dict:
    """One whole verdict through `gate_job`, as the service runs it; seconds in all and per stage.
    `history` (the outcomes of the jobs before, appended to) answers as the service's would whether
    the baseline's profile was measured already as an earlier job's candidate (docs/reuse.md).
    `spares`: the service's child started ahead of the next job (gate/executors/spare.py), or None.
    `pch_dir`: the precompiled torch headers (gate/compiling/torch_pch.py), or None for none."""
    from gate.domain.job import JobOrder
    from gate.domain.reuse import HistoryAnswers, Provenance, ReusedProfile, ReuseKeys
    from gate.executors.job import JobContext, gate_job
    from gate.sources.mirror import Mirror

    class Earlier:
        def answers(self, _kernel: str, keys: ReuseKeys) -> HistoryAnswers:
            for job_id, (earlier_sha, earlier) in reversed(list(enumerate(history))):
                profile = earlier.result.candidate.profile
                if earlier.candidate_key == keys.baseline and profile is not None and profile.status.value == "passed":
                    when = time.strftime("%Y-%m-%dT%H:%M:%S")
                    return HistoryAnswers(baseline_profile=ReusedProfile(profile, Provenance(job_id, earlier_sha, when)))
            return HistoryAnswers()

    options = RunOptions(ncu_path=shutil.which("ncu") or "/usr/local/cuda/bin/ncu", ncu_clock_control="none",
                         build_cache_dir=str(data_dir / "build-cache"), bench_budget_s=5.0,
                         pch_dir=str(pch_dir or ""))
    timeline: list[str] = []     # "seconds stage/side state": where the verdict's time goes
    t0 = time.perf_counter()

    def heard(event: object) -> None:
        if event.state != "running":
            timeline.append(f"{time.perf_counter() - t0:5.1f} {event.stage}/{event.side} {event.state}")
    outcome = gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=base, kernel="fma_chain"),
                       JobContext(data_dir=data_dir, options=options, mirror=Mirror(data_dir / "mirrors"),
                                  history=Earlier(), on_event=heard, spares=spares))
    total = time.perf_counter() - t0
    history.append((sha, outcome))
    res = outcome.result
    sides = [("candidate", res.candidate), ("baseline", res.baseline)]
    stages = {f"{stage}_{side}": getattr(getattr(r, stage), "duration_s", 0.0)
              for side, r in sides if r is not None for stage in ("static", "build", "correctness", "profile")
              if getattr(r, stage, None) is not None}
    stages["bench"] = res.bench.duration_s if res.bench else 0.0
    build_c = res.candidate.build
    binding = re.search(r"^== (\S+\.cpp) \(([^)]*)\)", build_c.log if build_c else "", re.M)
    return {"label": label, "binding": f"{binding[1]}: {binding[2]}" if binding else "", "total_s": total, "verdict": outcome.report.verdict.value,
            "reason": outcome.report.reason, "stages_s": stages,
            # a reused baseline profile keeps the duration of the job that measured it: not this job's time
            "profile_s": stages.get("profile_candidate", 0.0) + (stages.get("profile_baseline", 0.0) if not any(
                n.startswith("baseline profile") for n in res.notes) else 0.0),
            "timeline": timeline,
            # the candidate profile's own account of its time ("from the go: ...")
            "profile_reason": res.candidate.profile.reason if res.candidate.profile else "",
            "cand_cache": [build_c.cache_hits, build_c.cache_misses] if build_c else None,
            "ratios": [round(t.ratio or 0, 4) for t in (res.bench.shapes if res.bench else [])],
            # "... integrity figures in X s": the cost of the all-streams check and the floor (issue 10)
            "bench_reason": res.bench.reason if res.bench else "",
            "baseline_profile": next((n for n in res.notes if n.startswith("baseline profile")), "profiled"),
            "child": next((n for n in res.notes if "(a spare)" in n), "started by the job")}


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


SECTIONS = ("verdict", "aa", "det", "sdpa", "spread")
VERDICT_JOBS = ("cold_no_pch", "pch", "cold", "warm", "warm_own")
EDIT_PAUSE_S = 10.0     # between the cold and the warm job: the engineer's next edit (the spare child loads)
SPREAD_JOBS = int(os.environ.get("GATE_SPREAD_JOBS", "5"))
BIAS_PCT = 0.2          # issue 14: no significant A/A shift beyond this, in either direction


def selected_sections(argv: list[str]) -> list[str]:
    """Sections named on the command line, else in GATE_QUALITY_SECTIONS (comma-separated), else all."""
    names = argv or [n for n in os.environ.get("GATE_QUALITY_SECTIONS", "").split(",") if n]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise SystemExit(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(SECTIONS)}")
    return names or list(SECTIONS)


def aa_bias(rows: list[dict]) -> dict:
    """Over A/A trials: the mean and median shift of the ratio (%), and the trials whose shift is
    significant (p < 0.05) and beyond +-BIAS_PCT, counted per direction."""
    shifts = sorted((r["ratio"] - 1) * 100 for r in rows)
    sig = [(r["ratio"] - 1) * 100 for r in rows if r["p"] is not None and r["p"] < 0.05]
    return {"mean_shift_pct": sum(shifts) / len(shifts), "median_shift_pct": shifts[len(shifts) // 2],
            "significant_above": sum(x > BIAS_PCT for x in sig), "significant_below": sum(x < -BIAS_PCT for x in sig),
            "trials": len(rows)}


def spread_repo(work: Path) -> tuple[Path, dict[str, str]]:
    """The subject (with a fast peer) as a git repository: base, an A/A copy (a commit that changes no
    source of the kernel) and +5 %."""
    repo = work / "spread-repo"
    shutil.copytree(SUBJECT, repo)
    (repo / "gate.toml").write_text(subject_manifest([SMALL, LARGE, MEMORY], "quality_workload:make_with_peer"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    shas = {"base": _git(repo, "rev-parse", "HEAD")}
    (repo / "NOTES.md").write_text("A/A: this commit changes no source of the kernel.\n")
    _git(repo, "add", "NOTES.md")
    _git(repo, "commit", "-q", "-m", "a/a copy")
    shas["copy"] = _git(repo, "rev-parse", "HEAD")
    cu = repo / "kernels" / "fma_chain.cu"
    cu.write_text(re.sub(r"#define GATE_EXTRA_PCT \d+", "#define GATE_EXTRA_PCT 5", cu.read_text()))
    _git(repo, "commit", "-q", "-am", "+5 % arithmetic")
    shas["plus5"] = _git(repo, "rev-parse", "HEAD")
    return repo, shas


def spread(work: Path, jobs: int) -> dict:
    """The base revision gated in `jobs` separate jobs per arrangement (each job its own GPU child
    process, through `gate_job` as the service runs it): alone (new kernel), against its A/A copy, and
    against the +5 % variant. Its median per job and shape; max/min and spread per arrangement."""
    from gate.domain.job import JobOrder
    from gate.executors.job import JobContext, gate_job
    from gate.sources.mirror import Mirror

    repo, shas = spread_repo(work)
    data_dir = work / "spread-data"
    options = RunOptions(profile=False, bench_budget_s=3.0, build_cache_dir=str(data_dir / "build-cache"),
                         ncu_clock_control="none")
    # (label, candidate, baseline, the side that is the base revision)
    arrangements = [("alone", shas["base"], None, "candidate"), ("a/a", shas["copy"], shas["base"], "baseline"),
                    ("vs +5 %", shas["plus5"], shas["base"], "baseline")]
    runs: dict[str, list[dict]] = {label: [] for label, *_ in arrangements}
    for i in range(jobs):                         # arrangements interleaved, so drift over time shows in all
        for label, sha, base, side in arrangements:
            outcome = gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=base, kernel="fma_chain"),
                               JobContext(data_dir=data_dir, options=options, mirror=Mirror(data_dir / "mirrors")))
            bench_res = outcome.result.bench
            if bench_res is None or not bench_res.shapes:
                raise SystemExit(f"spread job {label} #{i}: no timing ({outcome.report.reason})")
            watch = bench_res.gpu_watch
            runs[label].append({
                "verdict": outcome.report.verdict.value, "reason": outcome.report.reason,
                "median_us": {t.shape: getattr(t, side).median_us for t in bench_res.shapes},
                "method": {t.shape: f"{t.method} x{t.launches}" for t in bench_res.shapes},
                "sm_mhz": [watch.sm_clock_mhz_min, watch.sm_clock_mhz_max] if watch and watch.available else None})
            print(f"spread {label:<8} job {i + 1}/{jobs}: {runs[label][-1]['median_us']} "
                  f"{runs[label][-1]['method']} SM {runs[label][-1]['sm_mhz']}", flush=True)
    shapes = list(runs["alone"][0]["median_us"])
    summary: dict = {"jobs": jobs, "runs": runs, "shapes": {}}
    for shape in shapes:
        per = {}
        for label in runs:
            values = [r["median_us"][shape] for r in runs[label]]
            per[label] = {"min_us": min(values), "max_us": max(values),
                          "spread_pct": 100 * (max(values) - min(values)) / min(values)}
        every = [r["median_us"][shape] for label in runs for r in runs[label]]
        per["all"] = {"min_us": min(every), "max_us": max(every),
                      "spread_pct": 100 * (max(every) - min(every)) / min(every)}
        summary["shapes"][shape] = per
    return summary


def main(argv: list[str]) -> int:
    import torch
    import torch.nn.functional as F

    sections = selected_sections(argv)
    out = Path(os.environ.get("OUT", "."))
    work = Path(tempfile.mkdtemp(prefix="gate-quality-"))
    cache = work / "cache"
    report: dict = {"device": torch.cuda.get_device_name(), "trials": TRIALS, "sections": sections}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch; torch.zeros(1, device='cuda')"], check=True)
    report["python_torch_start_s"] = time.perf_counter() - t

    if "verdict" in sections:
        repo, shas = subject_repo(work)
        data_dir = work / "data"
        history: list = []
        # The same cold job without precompiled headers, in a data folder of its own, for the comparison.
        from gate.executors.spare import Spares

        no_pch = work / "data-no-pch"
        spares = Spares(no_pch / "spares", hidden=(no_pch,))    # its child started as the cold job's is
        try:
            report["cold_no_pch"] = verdict_time(no_pch, repo, shas[3], shas[0], "cold, no precompiled headers", [],
                                                 spares)
        finally:
            spares.close()
        # What serve, worker and demo start when they start (`gate pch`), before the first job.
        from gate.compiling import toolchain as tc
        from gate.compiling.torch_pch_make import make

        pch_dir = data_dir / "torch-pch"
        t_pch = time.perf_counter()
        made = make(pch_dir, tc.discover("nvcc"), ["torch/extension.h"])
        report["pch"] = {"label": "gate pch (at start)", "total_s": time.perf_counter() - t_pch,
                         "made": [f"{m.header}: {m.state}" for m in made]}
        spares = Spares(data_dir / "spares", hidden=(data_dir,))   # as the service's executor holds them
        try:
            report["cold"] = verdict_time(data_dir, repo, shas[3], shas[0], "cold (empty cache)", history, spares,
                                          pch_dir)
            time.sleep(EDIT_PAUSE_S)
            # The next edit: its baseline is the cold job's candidate, whose profile is not taken again.
            report["warm"] = verdict_time(data_dir, repo, shas[5], shas[3], "warm (kernel-only change)", history,
                                          spares, pch_dir)
        finally:
            spares.close()                      # no idle context beside the sections that time
        # The same kind of edit, its child started by the job itself (`gate run`, GATE_SPARE_CHILD=0).
        report["warm_own"] = verdict_time(data_dir, repo, shas[4], shas[3], "warm, no spare child", history,
                                          pch_dir=pch_dir)
        print("verdict times:", json.dumps({k: report[k] for k in VERDICT_JOBS}, default=str), flush=True)

    sizes = {"large": LARGE, "small": SMALL}
    for size, shape in sizes.items():
        if not {"aa", "det"} & set(sections):
            break
        spec = kernel_spec([shape])
        wl = workloads.get_workload(spec, SUBJECT)
        _, a = built(work, cache, 0)
        if "aa" in sections:
            _, a2 = built(work, cache, 0, tag="-copy")       # same source, its own .so: a true A/A
            report[f"aa_{size}"] = trials(spec, wl, a, a2, TRIALS)
            report[f"aa_{size}"]["bias"] = aa_bias(report[f"aa_{size}"]["rows"])
            print(size, "A/A", report[f"aa_{size}"]["regressions"], report[f"aa_{size}"]["bias"], flush=True)
        if "det" in sections:
            _, slow3 = built(work, cache, 3)
            report[f"det3_{size}"] = trials(spec, wl, slow3, a, TRIALS)
            print(size, "det3", report[f"det3_{size}"]["regressions"], flush=True)
    if "det" in sections:
        spec = kernel_spec([SMALL])
        wl = workloads.get_workload(spec, SUBJECT)
        _, a = built(work, cache, 0)
        for pct in (5, 8, 12):
            _, slow = built(work, cache, pct)
            report[f"det{pct}_small"] = trials(spec, wl, slow, a, TRIALS)

    if "sdpa" in sections:
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

    if "spread" in sections:
        report["spread"] = spread(work, SPREAD_JOBS)

    name = "gate_quality.json" if len(sections) == len(SECTIONS) else f"gate_quality-{'-'.join(sections)}.json"
    (out / name).write_text(json.dumps(to_json(report), indent=1, default=str))
    _table(report)
    return 0


def _table(r: dict) -> None:
    t1 = f"{THRESHOLDS_PCT[0]:g}"
    print(f"\n== gate quality on {r['device']} ({r['trials']} trials each; alarm = regression at +{t1} % "
          f"[at +{THRESHOLDS_PCT[1]:g} %]; sections {', '.join(r['sections'])})")
    for key in VERDICT_JOBS:
        if key not in r:
            continue
        v = r[key]
        if "made" in v:        # the precompiled headers, made before the cold job
            print(f"{v['label']:<28} {v['total_s']:6.1f} s  {', '.join(v['made'])}")
            continue
        print(f"{v['label']:<28} {v['total_s']:6.1f} s  verdict {v['verdict']} (ratios {v['ratios']}); "
              f"candidate build hits/misses {v['cand_cache']}; child: {v.get('child', '?')}")
        print(f"  binding: {v.get('binding', '')}")
        print("  stages (s): " + ", ".join(f"{k} {t:.1f}" for k, t in v["stages_s"].items()))
        print("  timeline (s): " + " | ".join(v.get("timeline", [])))
        print("  profile: " + v.get("profile_reason", ""))
    if "warm" in r:
        w = r["warm"]
        print(f"{'profile stage (warm)':<28} {w['profile_s']:6.1f} s of {w['total_s']:.1f} s "
              f"(the rest of the verdict: {w['total_s'] - w['profile_s']:.1f} s); baseline: {w['baseline_profile']}")
    for key, label in (("aa_large", "A/A ~300 us"), ("aa_small", "A/A ~10 us"), ("aa_sdpa", "A/A SDPA 10 us"),
                       ("det3_large", "+3 % ~300 us"), ("det3_small", "+3 % ~10 us"), ("det5_small", "+5 % ~10 us"),
                       ("det8_small", "+8 % ~10 us"), ("det12_small", "+12 % ~10 us")):
        if key not in r:
            continue
        v = r[key]
        regs = v["regressions"]
        print(f"{label:<16} median {v['median_us']:8.2f} us  ratio {v['median_ratio']:.4f}  "
              f"regressions {regs[str(THRESHOLDS_PCT[0])]:>2}/{v['trials']} "
              f"[{regs[str(THRESHOLDS_PCT[1])]:>2}/{v['trials']}]  ({v['method']})")
    for key, label in (("aa_large", "A/A bias ~300 us"), ("aa_small", "A/A bias ~10 us")):
        if key in r and "bias" in r[key]:
            b = r[key]["bias"]
            print(f"{label:<16} shift mean {b['mean_shift_pct']:+.3f} %  median {b['median_shift_pct']:+.3f} %  "
                  f"significant beyond +-{BIAS_PCT:g} %: {b['significant_above']} above, "
                  f"{b['significant_below']} below of {b['trials']}")
    if "naive_sdpa" in r:
        n = r["naive_sdpa"]
        print(f"{'naive A-then-B SDPA':<16} B slower by > 1 % in {n['b_slower_gt_1pct']}/{len(n['ratios'])} trials, "
              f"median B/A {sorted(n['ratios'])[len(n['ratios']) // 2]:.4f}")
    if "spread" in r:
        sp = r["spread"]
        print(f"cross-job spread of one revision, {sp['jobs']} separate jobs per arrangement (median us):")
        for shape, per in sp["shapes"].items():
            for label, v in per.items():
                print(f"  {shape:<22} {label:<8} min {v['min_us']:9.3f}  max {v['max_us']:9.3f}  "
                      f"max/min {v['max_us'] / v['min_us']:.4f}  spread {v['spread_pct']:.2f} %")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
