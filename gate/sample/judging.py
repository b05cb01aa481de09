"""One synthetic job: the numbers, rule table and stage payloads of a commit (SYNTHETIC SAMPLE DATA)."""

from __future__ import annotations

import math
from typing import Any

from gate.sample.kernels import (
    A100_SLOWDOWN, FLOPS, PEERS_ON_A100, SHAPES, KernelModel, Outcome, StoryEvent, rule, verdict_of,
)
from gate.domain import (
    BenchResult, BuildResult, CorrectnessCase, CorrectnessResult, FunctionResources, KernelMetrics,
    ProfileResult, RuleOutcome, ShapeTiming, StageStatus, StaticResult, TimingSamples,
)
from gate.domain.codec import to_json

ARCHES = ("sm_80", "sm_90")


def gate_commit(m: KernelModel, event: StoryEvent, gpu: str, sha: str) -> Outcome:
    mine = event.target == m.name
    scale = A100_SLOWDOWN if "A100" in gpu else 1.0
    factor, pipe, conflicts, regs = 1.0, m.tensor_pipe_pct, m.conflict_pct, m.registers
    if mine and event.kind == "ldmatrix":
        factor, pipe, conflicts, regs = 0.80, pipe + 14.0, 0.8, regs + 16
    elif mine and event.kind == "regress":
        factor = 1.08 + 0.07 * m.rng.random()
    elif mine and event.kind == "conflicts":
        factor, conflicts = 1.04, 18.5
    elif mine and event.kind == "inconclusive":
        factor = 1.028
    elif event.kind == "normal" and m.rng.random() < 0.1:
        factor = 1.0 - 0.006 * m.rng.random()
    profiled = not (mine and event.kind == "noprofile" and "A100" in gpu)
    gates = m.kind.gates
    rules, metrics, timings = [], [], []
    for shape in SHAPES[m.kind.workload]:
        base_us = m.noisy(m.level[shape] * scale)
        cand_us = m.noisy(m.level[shape] * scale * factor)
        pct = 100.0 * (cand_us / base_us - 1.0)
        limit = gates["max_latency_regression_pct"]
        if event.kind == "inconclusive" and mine and shape.endswith("causal"):
            outcome, why = RuleOutcome.INCONCLUSIVE, f"{shape}: +{pct:.1f} % straddles {limit} %"
        elif pct > limit:
            outcome, why = RuleOutcome.FAIL, f"{shape}: {pct:+.1f} % slower than the baseline"
        else:
            outcome, why = RuleOutcome.PASS, f"{shape}: {pct:+.1f} %"
        # As decide() writes it: medians in µs, the limit as the baseline median x (1 + pct).
        rules.append(rule("max_latency_regression_pct", outcome, why, shape=shape, value=round(cand_us, 3),
                          threshold=round(base_us * (1 + limit / 100.0), 3), baseline=round(base_us, 3),
                          delta=round(cand_us - base_us, 3), unit="us"))
        peers = {p: m.noisy(v * scale) for p, v in m.kind.peers_us.get(shape, {}).items()
                 if scale == 1.0 or p in PEERS_ON_A100}
        sides = {"candidate": cand_us, "baseline": base_us, **peers}
        for series, us in sides.items():
            metrics.append(_metric("latency_median_us", shape, series, us, "us", "lower"))
            metrics.append(_metric("tflops", shape, series, FLOPS[shape] / us / 1e6, "TFLOP/s",
                                   "higher"))
        for series, us in (("candidate", cand_us), ("baseline", base_us)):
            metrics.append(_metric("latency_p10_us", shape, series, us * 0.985, "us", "lower"))
            metrics.append(_metric("latency_p90_us", shape, series, us * 1.02, "us", "lower"))
        metrics.append(_metric("latency_ratio", shape, "candidate", cand_us / base_us, "x", "lower"))
        if profiled:
            metrics.extend(_ncu_metrics(m, shape, pipe, conflicts))
        timings.append((shape, cand_us, base_us, peers))
    rules.extend(_resource_rules(m, gates, pipe, conflicts, regs, profiled))
    for arch in ARCHES:
        metrics.append(_metric("registers", "", arch, regs, "regs/thread", "lower"))
        metrics.append(_metric("spill_bytes", "", arch, 0, "B", "lower"))
        metrics.append(_metric("smem_bytes", "", arch, m.kind.smem_bytes, "B", "lower"))
    verdict, reason = verdict_of(rules, profiled)
    if verdict == "accept":
        m.level = {s: v * factor for s, v in m.level.items()}
        m.tensor_pipe_pct, m.conflict_pct, m.registers = pipe, conflicts, regs
    fingerprint = {"gpu_name": gpu, "compute_capability": "8.0" if "A100" in gpu else "9.0",
                   "driver": "570.124.06", "cuda": "12.8", "torch": "2.7.0",
                   "ncu_version": "2025.1.1.0", "sm_clock_mhz": 1410 if "A100" in gpu else 1755}
    out = Outcome(verdict, reason, rules, fingerprint, metrics)
    if m.with_stages:
        out.stages = _stages(m, sha, timings, pipe, conflicts, regs, profiled)
    return out


def _metric(name: str, shape: str, series: str, value: float, unit: str, direction: str) -> dict:
    return {"name": name, "shape": shape, "series": series, "value": float(value), "unit": unit,
            "direction": direction}


def _ncu_metrics(m: KernelModel, shape: str, pipe: float, conflicts: float) -> list[dict]:
    big = shape.endswith("causal") or shape.startswith("m4096")
    out = []
    for series, p, c in (("candidate", pipe, conflicts),
                         ("baseline", m.tensor_pipe_pct, m.conflict_pct)):
        out += [
            _metric("tensor_pipe_pct", shape, series, max(0.0, m.noisy(p, 0.02)), "%", "higher"),
            _metric("ld_bank_conflict_pct", shape, series, max(0.0, m.noisy(c, 0.05)), "%", "lower"),
            _metric("st_bank_conflict_pct", shape, series, m.noisy(0.4, 0.1), "%", "lower"),
            _metric("warps_active_pct", shape, series, m.noisy(41.0 if big else 23.0, 0.02), "%",
                    "higher"),
            _metric("dram_pct", shape, series, m.noisy(58.0 if big else 21.0, 0.03), "%", "higher"),
            _metric("sm_throughput_pct", shape, series, m.noisy(p + 18.0, 0.02), "%", "higher"),
        ]
    return out


def _resource_rules(m: KernelModel, gates: dict, pipe: float, conflicts: float, regs: int,
                    profiled: bool) -> list[Any]:
    rows = []
    checks = [("min_tensor_pipe_pct", pipe, m.tensor_pipe_pct, lambda v, t: v >= t, True),
              ("max_bank_conflict_pct", conflicts, m.conflict_pct, lambda v, t: v <= t, True),
              ("min_warps_active_pct", 41.0, 41.0, lambda v, t: v >= t, True),
              ("max_registers", regs, m.registers, lambda v, t: v <= t, False),
              ("max_spill_bytes", 0, 0, lambda v, t: v <= t, False)]
    for name, value, base, ok, needs_profile in checks:
        if name not in gates:
            continue
        limit = gates[name]
        if needs_profile and not profiled:
            rows.append(rule(name, RuleOutcome.NOT_RUN, "not run: ncu is not installed on this "
                             "worker", threshold=limit, baseline=round(base, 2)))
            continue
        passed = ok(value, limit)
        rows.append(rule(name, RuleOutcome.PASS if passed else RuleOutcome.FAIL,
                         f"{name.split('_', 1)[1].replace('_', ' ')} {value:.4g} "
                         f"{'within' if passed else 'breaks'} {limit}",
                         value=round(value, 2), threshold=limit, baseline=round(base, 2),
                         delta=round(value - base, 2), unit="%" if name.endswith("pct") else ""))
    return rows


def _stages(m: KernelModel, sha: str, timings: list, pipe: float, conflicts: float, regs: int,
            profiled: bool) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    rng = m.rng
    fn = f"_Z{len(m.name) + 4}{m.name}_fwdPK6__halfS1_S1_PS_"
    hmma = 384 if m.kind.tensor_pipe_pct else 0
    opcodes = {"HMMA": hmma, "LDSM": 96 if regs > m.kind.registers else 0, "LDS": 212,
               "FFMA": 640, "MUFU": 64, "STS": 48, "BAR": 18, "LDG": 32}
    static = StaticResult(StageStatus.PASSED, duration_s=2.1, sass_available=True, functions=[
        FunctionResources(fn, arch, regs, m.kind.smem_bytes, 0, 0, 0,
                          {k: v for k, v in opcodes.items() if v}) for arch in ARCHES],
        log="\n".join(f"ptxas info    : Used {regs} registers, {m.kind.smem_bytes} bytes smem, "
                      f"400 bytes cmem[0] ({arch})" for arch in ARCHES))
    build = BuildResult(StageStatus.PASSED, duration_s=38.4, cache_hits=1, cache_misses=2,
                        log=f"[1/3] nvcc -O3 -gencode arch=compute_90,code=sm_90 -c {m.name}.cu\n"
                            "[2/3] c++ -O3 -c flashcore_binding.cpp\n[3/3] c++ -shared -o "
                            f"{m.name}.so\n(synthetic sample data at {sha[:10]})")
    cases = [CorrectnessCase(shape, "float16", seed, True, max_abs_err=rng.uniform(4e-4, 1.2e-3),
                             mean_abs_err=rng.uniform(2e-5, 6e-5), torch_max_abs_err=9.8e-4,
                             tolerance=3.9e-3)
             for shape, *_ in timings for seed in (0, 1, 2)]
    correctness = CorrectnessResult(StageStatus.PASSED, duration_s=4.7, cases=cases)
    bench = BenchResult(StageStatus.PASSED, duration_s=31.0, shapes=[
        ShapeTiming(shape, "float16", _samples(m, cand), _samples(m, base),
                    {p: _samples(m, us) for p, us in peers.items()}, ratio=cand / base,
                    ratio_ci_low=cand / base - 0.006, ratio_ci_high=cand / base + 0.006,
                    p_value=0.003 if abs(cand / base - 1) > 0.02 else 0.41, rounds=40)
        for shape, cand, base, peers in timings])
    kernels = [KernelMetrics(fn, shape, duration_ns=cand * 1e3, tensor_pipe_pct=pipe,
                             ld_bank_conflict_pct=conflicts, st_bank_conflict_pct=0.4,
                             warps_active_pct=41.0, dram_pct=48.0, sm_throughput_pct=pipe + 18,
                             registers=regs, smem_per_block_bytes=m.kind.smem_bytes)
               for shape, cand, *_ in timings]
    profile = (ProfileResult(StageStatus.PASSED, duration_s=57.0, kernels=kernels,
                             ncu_version="2025.1.1.0")
               if profiled else
               ProfileResult(StageStatus.NOT_RUN, reason="not run: ncu is not installed on this worker"))
    return [(side, name, r.status.value, r.reason, to_json(r)) for side, name, r in (
        ("candidate", "static", static), ("candidate", "build", build),
        ("candidate", "correctness", correctness), ("joint", "bench", bench),
        ("candidate", "profile", profile))]


def _samples(m: KernelModel, median_us: float) -> TimingSamples:
    """40 interleaved-round samples: log-normal spread of ~0.8 % and a few slow outliers."""
    xs = sorted(median_us * math.exp(m.rng.gauss(0, 0.008)) * (1.05 if i % 13 == 12 else 1.0)
                for i in range(40))
    return TimingSamples([round(x, 3) for x in xs], xs[20], xs[4], xs[36])
