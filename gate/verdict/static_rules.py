"""Rule rows of the static stage (ptxas figures and SASS), for `decide`. Pure functions.

Which ptxas figures are judged, in what unit and words, is the catalogue's `static limit` and
`static increase` rows (`gate.verdict.catalog`); each row's metric names the `FunctionResources`
field it reads.
"""

from __future__ import annotations

from gate.domain.manifest import Gates
from gate.domain.names import Rule
from gate.domain.results import FunctionResources, StageStatus, StaticResult
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.nvidia.symbols import kernel_name
from gate.verdict.catalog import CATALOG, Kind, RuleSpec, of_kind, threshold_of
from gate.verdict.rules import NEW_KERNEL, bound_sentence

O = RuleOutcome
_OPCODES_SHOWN = 6


def _of(spec: RuleSpec, function: FunctionResources) -> int:
    return getattr(function, spec.metric)       # the ptxas figure of the same name


def static_rows(static: StaticResult | None, gates: Gates, catalog: tuple[RuleSpec, ...] = CATALOG) -> list[RuleRow]:
    """The static limits the manifest sets (worst function per arch) and require_sass."""
    limits = [(spec, threshold_of(spec, gates)) for spec in of_kind(Kind.STATIC_LIMIT, catalog)]
    limits = [(spec, bound) for spec, bound in limits if bound is not None]
    sass = [spec for spec in of_kind(Kind.SASS, catalog) if threshold_of(spec, gates)]
    wanted = [spec.rule for spec, _ in limits] + [spec.rule for spec in sass]
    if not wanted:
        return []
    if static is None or static.status is not StageStatus.PASSED or not static.functions:
        why = "no kernel functions compiled" if static and static.status is StageStatus.PASSED \
            else "static stage did not pass"
        return [RuleRow(name, O.NOT_RUN, why) for name in wanted]
    rows: list[RuleRow] = []
    archs = list(dict.fromkeys(f.arch for f in static.functions))
    for spec, bound in limits:
        for arch in archs:
            worst = max((f for f in static.functions if f.arch == arch), key=lambda f: _of(spec, f))
            value = _of(spec, worst)
            ok, sentence = bound_sentence(spec.words, value, bound, spec.unit, minimum=False)
            rows.append(RuleRow(spec.rule, O.PASS if ok else O.FAIL, shape="",
                                reason=f"{arch} {kernel_name(worst.function)}: {sentence}",
                                value=value, threshold=bound, unit=spec.unit))
    for spec in sass:
        rows += _sass_rows(static, archs, threshold_of(spec, gates))
    return rows


def _sass_rows(static: StaticResult, archs: list[str], required: list[str]) -> list[RuleRow]:
    if not static.sass_available:
        return [RuleRow(Rule.REQUIRE_SASS, O.NOT_RUN, "no SASS: cuobjdump/nvdisasm not found",
                        threshold=",".join(required))]
    rows = []
    for arch in archs:
        counts = {op: sum(f.sass_opcodes.get(op, 0) for f in static.functions if f.arch == arch)
                  for op in required}
        missing = [op for op, n in counts.items() if n == 0]
        shown = ", ".join(f"{op} x{n}" for op, n in counts.items())
        reason = f"{arch}: missing {', '.join(missing)}" if missing else f"{arch}: {shown}"
        rows.append(RuleRow(Rule.REQUIRE_SASS, O.FAIL if missing else O.PASS, reason,
                            value=shown, threshold=",".join(required)))
    return rows


def static_delta_rows(cand: StaticResult | None, base: StaticResult | None, gates: Gates,
                      new_kernel: bool = False, catalog: tuple[RuleSpec, ...] = CATALOG) -> list[RuleRow]:
    """Against the baseline's static figures, per function and arch present in both: one
    `static_delta` row (always a pass: it shows what changed, e.g. `STS +32`) where anything did, and
    the `max_*_increase` rules where the manifest sets them."""
    figures = [spec for spec in of_kind(Kind.STATIC_INCREASE, catalog) if spec.metric is not None]
    wanted = [spec for spec in figures if threshold_of(spec, gates) is not None]
    if new_kernel:
        return [RuleRow(spec.rule, O.PASS, NEW_KERNEL) for spec in wanted]
    if cand is None or base is None or cand.status is not StageStatus.PASSED or base.status is not StageStatus.PASSED:
        return [RuleRow(spec.rule, O.NOT_RUN, "no static figures of both revisions") for spec in wanted]
    before = {(f.function, f.arch): f for f in base.functions}
    rows: list[RuleRow] = []
    for now in cand.functions:
        old = before.get((now.function, now.arch))
        if old is None:
            continue
        where = f"{now.arch} {kernel_name(now.function)}"
        changed = [f"{spec.words} {_of(spec, old)}->{_of(spec, now)}" for spec in figures
                   if _of(spec, old) != _of(spec, now)]
        ops = {op: now.sass_opcodes.get(op, 0) - old.sass_opcodes.get(op, 0)
               for op in set(now.sass_opcodes) | set(old.sass_opcodes)}
        ops = dict(sorted(((op, d) for op, d in ops.items() if d), key=lambda kv: (-abs(kv[1]), kv[0])))
        if changed or ops:
            shown = [f"{op} {d:+d}" for op, d in list(ops.items())[:_OPCODES_SHOWN]]
            more = f" (+{len(ops) - _OPCODES_SHOWN} more opcodes)" if len(ops) > _OPCODES_SHOWN else ""
            rows.append(RuleRow(Rule.STATIC_DELTA, O.PASS, f"{where}: " + ", ".join(changed + shown) + more,
                                value=now.registers, baseline=old.registers,
                                delta=now.registers - old.registers, unit="registers"))
        for spec in wanted:
            bound = threshold_of(spec, gates)
            increase = _of(spec, now) - _of(spec, old)
            ok = increase <= bound
            rows.append(RuleRow(spec.rule, O.PASS if ok else O.FAIL,
                                f"{where}: {spec.words} {_of(spec, old)} -> {_of(spec, now)}, an increase of "
                                f"{increase:+d}, {'within' if ok else 'over'} the limit of +{bound}",
                                value=_of(spec, now), threshold=bound,
                                baseline=_of(spec, old), delta=increase, unit=spec.unit))
    return rows
