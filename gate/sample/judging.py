"""One synthetic job: a commit's numbers and rule table, judged as the gate would (SYNTHETIC SAMPLE DATA).

Rule tables use the gate's own `RuleRow` type; the stage payloads come from `gate.sample.stage_payloads`.
"""

from __future__ import annotations

from typing import Any

from gate.domain import RuleOutcome, RuleRow, Verdict
from gate.domain.codec import from_json, to_json
from gate.verdict import decide
from gate.verdict.rules import bound_sentence
from gate.sample.kernel_model import KernelModel, Outcome
from gate.sample.kernels import A100_SLOWDOWN, FLOPS, PEERS_ON_A100, SHAPES
from gate.sample.stage_payloads import NO_NCU, stage_payloads, static_result
from gate.sample.story import StoryEvent
from gate.domain.names import Metric, Side
from gate.domain.rule_catalog import BY_RULE, Bound, Kind, Rule
from gate.storage.recording import static_metrics


def judge_commit(m: KernelModel, event: StoryEvent, gpu: str, sha: str) -> Outcome:
    """Gate one commit of `m`'s kernel on `gpu`; an accepted commit becomes `m`'s new state."""
    mine = event.target == m.name
    scale = A100_SLOWDOWN if "A100" in gpu else 1.0
    factor, pipe, conflicts, regs = _commit_effect(m, event)
    profiled = not (mine and event.kind == "noprofile" and "A100" in gpu)
    gates = m.kind.gates
    rules, metrics, timings = [], [], []
    for shape in SHAPES[m.kind.workload]:
        base_us = m.noisy(m.level[shape] * scale)
        cand_us = m.noisy(m.level[shape] * scale * factor)
        pct = 100.0 * (cand_us / base_us - 1.0)
        limit = gates[Rule.MAX_LATENCY_REGRESSION_PCT]
        if event.kind == "inconclusive" and mine and shape.endswith("causal"):
            outcome, why = RuleOutcome.INCONCLUSIVE, f"+{pct:.1f} %: the interval straddles the limit of {limit} %"
        elif pct > limit:
            outcome, why = RuleOutcome.FAIL, f"{pct:+.1f} % slower than the baseline, over the limit of {limit} %"
        else:
            outcome, why = RuleOutcome.PASS, f"{pct:+.1f} %, within the limit of {limit} %"
        # As decide() writes it: medians in µs, the limit as the baseline median x (1 + pct).
        rules.append(rule(Rule.MAX_LATENCY_REGRESSION_PCT, outcome, why, shape=shape, value=round(cand_us, 3),
                          threshold=round(base_us * (1 + limit / 100.0), 3), baseline=round(base_us, 3),
                          delta=round(cand_us - base_us, 3), unit="us"))
        peers = {p: m.noisy(v * scale) for p, v in m.kind.peers_us.get(shape, {}).items()
                 if scale == 1.0 or p in PEERS_ON_A100}
        sides = {Side.CANDIDATE: cand_us, Side.BASELINE: base_us, **peers}
        for series, us in sides.items():
            metrics.append(_metric(Metric.LATENCY_MEDIAN_US, shape, series, us))
            metrics.append(_metric(Metric.TFLOPS, shape, series, FLOPS[shape] / us / 1e6))
        for series, us in ((Side.CANDIDATE, cand_us), (Side.BASELINE, base_us)):
            metrics.append(_metric(Metric.LATENCY_P10_US, shape, series, us * 0.985))
            metrics.append(_metric(Metric.LATENCY_P90_US, shape, series, us * 1.02))
        metrics.append(_metric(Metric.LATENCY_RATIO, shape, Side.CANDIDATE, cand_us / base_us))
        if profiled:
            metrics.extend(_ncu_metrics(m, shape, pipe, conflicts))
        timings.append((shape, cand_us, base_us, peers))
    rules.extend(_resource_rules(m, gates, pipe, conflicts, regs, profiled))
    metrics += _static_figures(m, regs)
    verdict, reason = verdict_of(rules, profiled)
    if verdict == "accept":
        m.level = {s: v * factor for s, v in m.level.items()}
        m.tensor_pipe_pct, m.conflict_pct, m.registers = pipe, conflicts, regs
    fingerprint = {"gpu_name": gpu, "compute_capability": "8.0" if "A100" in gpu else "9.0",
                   "driver": "570.124.06", "cuda": "12.8", "torch": "2.7.0",
                   "ncu_version": "2025.1.1.0", "sm_clock_mhz": 1410 if "A100" in gpu else 1755}
    out = Outcome(verdict, reason, rules, fingerprint, metrics)
    if m.with_stages:
        out.stages = stage_payloads(m, sha, timings, pipe, conflicts, regs, profiled)
    return out


def _static_figures(m: KernelModel, regs: int) -> list[dict]:
    """The static figures as the gate extracts them from a static stage (registers, spills, SASS
    families): the same for every commit with `regs` registers, so extracted once per count."""
    if regs not in m.static_figures:
        m.static_figures[regs] = [{"name": row.name, "shape": row.shape, "series": row.series,
                                   "value": row.value, "unit": row.unit, "direction": row.direction}
                                  for row in static_metrics(static_result(m, regs))]
    return m.static_figures[regs]


def _commit_effect(m: KernelModel, event: StoryEvent) -> tuple[float, float, float, int]:
    """What the commit does to `m`'s kernel: (time factor, tensor pipe %, bank conflict %, registers)."""
    mine = event.target == m.name
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
    return factor, pipe, conflicts, regs


def _metric(name: Metric, shape: str, series: str, value: float) -> dict:
    return {"name": name.value, "shape": shape, "series": str(series), "value": float(value),
            "unit": name.unit, "direction": name.direction.value}


def _ncu_metrics(m: KernelModel, shape: str, pipe: float, conflicts: float) -> list[dict]:
    big = shape.endswith("causal") or shape.startswith("m4096")
    out = []
    for series, p, c in ((Side.CANDIDATE, pipe, conflicts),
                         (Side.BASELINE, m.tensor_pipe_pct, m.conflict_pct)):
        out += [
            _metric(Metric.TENSOR_PIPE_PCT, shape, series, max(0.0, m.noisy(p, 0.02))),
            _metric(Metric.LD_BANK_CONFLICT_PCT, shape, series, max(0.0, m.noisy(c, 0.05))),
            _metric(Metric.ST_BANK_CONFLICT_PCT, shape, series, m.noisy(0.4, 0.1)),
            _metric(Metric.SHARED_CONFLICT_PCT, shape, series, c),     # the figure the rule row judges
            _metric(Metric.WARPS_ACTIVE_PCT, shape, series, m.noisy(41.0 if big else 23.0, 0.02)),
            _metric(Metric.DRAM_PCT, shape, series, m.noisy(58.0 if big else 21.0, 0.03)),
            _metric(Metric.SM_THROUGHPUT_PCT, shape, series, m.noisy(p + 18.0, 0.02)),
        ]
    return out


def _resource_rules(m: KernelModel, gates: dict, pipe: float, conflicts: float, regs: int,
                    profiled: bool) -> list[Any]:
    rows = []
    # (rule, value, baseline value): words, unit and bound are the rule's catalogue row
    checks = [(Rule.MIN_TENSOR_PIPE_PCT, pipe, m.tensor_pipe_pct), (Rule.MAX_BANK_CONFLICT_PCT, conflicts, m.conflict_pct),
              (Rule.MIN_WARPS_ACTIVE_PCT, 41.0, 41.0), (Rule.MAX_REGISTERS, regs, m.registers),
              (Rule.MAX_SPILL_BYTES, 0, 0)]
    for name, value, base in checks:
        if name not in gates:
            continue
        spec = BY_RULE[name]
        words, unit, minimum = spec.words, spec.unit, spec.bound is Bound.FLOOR
        needs_profile = spec.kind in (Kind.NCU_ABSOLUTE, Kind.NCU_RELATIVE)
        limit = gates[name]
        if needs_profile and not profiled:
            rows.append(rule(name, RuleOutcome.NOT_RUN, NO_NCU, threshold=limit, baseline=round(base, 2)))
            continue
        passed, sentence = bound_sentence(words, round(value, 1), limit, unit, minimum=minimum)
        rows.append(rule(name, RuleOutcome.PASS if passed else RuleOutcome.FAIL, sentence,
                         value=round(value, 2), threshold=limit, baseline=round(base, 2),
                         delta=round(value - base, 2), unit=unit))
    return rows


def rule(name: str, outcome: RuleOutcome, reason: str, **kw: Any) -> Any:
    return to_json(RuleRow(rule=name, outcome=outcome, reason=reason, **kw))


def verdict_of(rules: list[Any], profiled: bool) -> tuple[str, str]:
    """The verdict the gate's own precedence gives these rows (`gate.verdict.decide.verdict_of`);
    the deciding row is marked in `rules`, as a real job's is."""
    rows = from_json(list[RuleRow], rules, path="rules")
    verdict, reason = decide.verdict_of(rows)
    rules[:] = to_json(rows)
    assert verdict is not Verdict.ACCEPT or profiled
    return verdict.value, reason
