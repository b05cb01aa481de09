"""Rule rows of the static stage (ptxas figures and SASS), for `decide`. Pure functions.

Which ptxas figures are judged, in what unit and words, is the catalogue's `static limit` and
`static increase` rows (`gate.domain.rule_catalog`); each row's metric names the `FunctionResources`
field it reads.
"""

from __future__ import annotations

from gate.domain.manifest import Gates, threshold_of
from gate.domain.names import Side
from gate.domain.results import FunctionResources, StageStatus, StaticResult
from gate.domain.rule_catalog import Kind, Rule, RuleSpec, of_kind
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.nvidia.symbols import kernel_name
from gate.verdict.rules import NEW_KERNEL, bound_sentence
from gate.verdict.static_scope import Unpaired

O = RuleOutcome
_OPCODES_SHOWN = 6
_FUNCTIONS_SHOWN = 8            # rows per side for functions of one revision only; the rest are counted


def _of(spec: RuleSpec, function: FunctionResources) -> int:
    return getattr(function, spec.metric)       # the ptxas figure of the same name


def static_limit_rows(static: StaticResult | None, gates: Gates,
                      specs: tuple[RuleSpec, ...] = of_kind(Kind.STATIC_LIMIT)) -> list[RuleRow]:
    """The static limits the manifest sets: the worst function per arch against each bound."""
    limits = [(spec, bound) for spec in specs if (bound := threshold_of(spec, gates)) is not None]
    if limits and (why := _unmeasured(static)):
        return [RuleRow(spec.rule, O.NOT_RUN, why) for spec, _ in limits]
    rows: list[RuleRow] = []
    for spec, bound in limits:
        for arch in dict.fromkeys(f.arch for f in static.functions):
            worst = max((f for f in static.functions if f.arch == arch), key=lambda f: _of(spec, f))
            value = _of(spec, worst)
            ok, sentence = bound_sentence(spec.words, value, bound, spec.unit, minimum=False)
            rows.append(RuleRow(spec.rule, O.PASS if ok else O.FAIL, shape="",
                                reason=f"{arch} {kernel_name(worst.function)}: {sentence}",
                                value=value, threshold=bound, unit=spec.unit))
    return rows


def sass_rows(static: StaticResult | None, gates: Gates,
              specs: tuple[RuleSpec, ...] = of_kind(Kind.SASS)) -> list[RuleRow]:
    """`require_sass`: the opcodes it lists must each appear in every arch's code."""
    required = [(spec, ops) for spec in specs if (ops := threshold_of(spec, gates))]
    if required and (why := _unmeasured(static)):
        return [RuleRow(spec.rule, O.NOT_RUN, why) for spec, _ in required]
    return [row for spec, ops in required for row in _opcode_rows(spec, static, ops)]


def _unmeasured(static: StaticResult | None) -> str | None:
    """Why the static stage gave no functions to judge; None when it did."""
    if static is None or static.status is not StageStatus.PASSED:
        return "static stage did not pass"
    return None if static.functions else "no kernel functions compiled"


def _opcode_rows(spec: RuleSpec, static: StaticResult, required: list[str]) -> list[RuleRow]:
    if not static.sass_available:
        return [RuleRow(spec.rule, O.NOT_RUN, "no SASS: cuobjdump/nvdisasm not found",
                        threshold=",".join(required))]
    rows = []
    for arch in dict.fromkeys(f.arch for f in static.functions):
        counts = {op: sum(f.sass_opcodes.get(op, 0) for f in static.functions if f.arch == arch)
                  for op in required}
        missing = [op for op, n in counts.items() if n == 0]
        shown = ", ".join(f"{op} x{n}" for op, n in counts.items())
        reason = f"{arch}: missing {', '.join(missing)}" if missing else f"{arch}: {shown}"
        rows.append(RuleRow(spec.rule, O.FAIL if missing else O.PASS, reason,
                            value=shown, threshold=",".join(required)))
    return rows


def static_delta_rows(cand: StaticResult | None, base: StaticResult | None, gates: Gates,
                      new_kernel: bool = False, specs: tuple[RuleSpec, ...] = of_kind(Kind.STATIC_INCREASE),
                      unpaired: list[Unpaired] | None = None) -> list[RuleRow]:
    """Per function and arch of both builds: a `static_delta` row (a pass that shows what changed, `STS +32`)
    where anything did, and the `max_*_increase` rules the manifest sets. A judged function of one revision
    only (`static_scope.unpaired`) gets a `static_delta` row with its own figures, so a kernel whose template
    arguments changed (`k<16, 16>` -> `k<16, 4>`) reads as one gone and one new; the increase rules judge
    pairs only."""
    figures = [spec for spec in specs if spec.metric is not None]
    wanted = [spec for spec in figures if threshold_of(spec, gates) is not None]
    if new_kernel:
        return [RuleRow(spec.rule, O.PASS, NEW_KERNEL) for spec in wanted]
    rows = flag_rows(cand, base)
    if cand is None or base is None or cand.status is not StageStatus.PASSED or base.status is not StageStatus.PASSED:
        return rows + [RuleRow(spec.rule, O.NOT_RUN, "no static figures of both revisions") for spec in wanted]
    before = {(f.function, f.arch): f for f in base.functions}
    for now in cand.functions:
        old = before.get((now.function, now.arch))
        if old is None:
            continue
        where = f"{now.arch} {kernel_name(now.function)}"
        changed = [f"{spec.words} {_of(spec, old)}->{_of(spec, now)}" for spec in figures
                   if _of(spec, old) != _of(spec, now)]
        ops = {op: now.sass_opcodes.get(op, 0) - old.sass_opcodes.get(op, 0)
               for op in set(now.sass_opcodes) | set(old.sass_opcodes)}
        shown = changed + _opcodes(ops, "{:+d}")
        if shown:
            rows.append(RuleRow(Rule.STATIC_DELTA, O.PASS, f"{where}: " + ", ".join(shown),
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
    for side in (Side.CANDIDATE, Side.BASELINE):
        rows += _unpaired_rows([u for u in unpaired or [] if u.side is side], side, figures)
    return rows


def flag_rows(cand: StaticResult | None, base: StaticResult | None) -> list[RuleRow]:
    """A `static_delta` row per manifest key whose flags differ between the two builds, each built as
    its own commit declares (`nvcc_flags: + -Xptxas=-O0`): a flag commit's figures are read against
    the baseline as it was committed, and the row says why they moved."""
    if cand is None or base is None or not (cand.flags and base.flags):     # none: a result stored before
        return []
    rows = []
    for key in dict.fromkeys([*base.flags, *cand.flags]):
        now, before = cand.flags.get(key, []), base.flags.get(key, [])
        if now == before:
            continue
        moved = [f"+ {f}" for f in now if f not in before] + [f"- {f}" for f in before if f not in now]
        rows.append(RuleRow(Rule.STATIC_DELTA, O.PASS, f"{key}: {', '.join(moved) or 'the same flags, reordered'}",
                            value=" ".join(now), baseline=" ".join(before)))
    return rows


def _opcodes(counts: dict[str, int], form: str) -> list[str]:
    """The opcodes with the largest non-zero counts as one item, `HMMA +64, LDSM -8` (`form` "{:+d}")
    or `HMMA x64` ("x{}"); no item when none."""
    ops = sorted(((op, n) for op, n in counts.items() if n), key=lambda kv: (-abs(kv[1]), kv[0]))
    if not ops:
        return []
    more = f" (+{len(ops) - _OPCODES_SHOWN} more opcodes)" if len(ops) > _OPCODES_SHOWN else ""
    return [", ".join(f"{op} {form.format(n)}" for op, n in ops[:_OPCODES_SHOWN]) + more]


def _unpaired_rows(functions: list[Unpaired], side: Side, figures: list[RuleSpec]) -> list[RuleRow]:
    """A `static_delta` row per judged function of `side` that the other side does not judge, with its
    figures; past `_FUNCTIONS_SHOWN`, one row counts the rest (a changed template list can add hundreds)."""
    rows = []
    for u in functions[:_FUNCTIONS_SHOWN]:
        f = u.function
        how = f"launched by the {side} only" if u.compiled_by_other else f"only in the {side}"
        own = [f"{spec.words} {_of(spec, f)}" for spec in figures] + _opcodes(f.sass_opcodes, "x{}")
        figure = {"value": f.registers} if side is Side.CANDIDATE else {"baseline": f.registers}
        rows.append(RuleRow(Rule.STATIC_DELTA, O.PASS, f"{f.arch} {kernel_name(f.function)}: {how}: " + ", ".join(own),
                            unit="registers", **figure))
    rest = functions[_FUNCTIONS_SHOWN:]
    if rest:
        archs = ", ".join(dict.fromkeys(u.function.arch for u in rest))
        rows.append(RuleRow(Rule.STATIC_DELTA, O.PASS, f"{len(rest)} more functions of the {side} that the other "
                            f"revision does not judge ({archs})"))
    return rows
