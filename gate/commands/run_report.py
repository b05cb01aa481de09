"""The text report of `gate run`: per kernel the verdict, its rule table and the static figures."""

from __future__ import annotations

from gate.domain.job import GateOutcome
from gate.domain.results import FunctionResources
from gate.nvidia.symbols import kernel_name
from gate.verdict.lines import job_diffs
from gate.domain.line_wording import as_text
from gate.domain.verdict import RuleRow
from gate.domain.rule_words import as_allowed
from gate.domain.wording import checked_calls_words, cut, plural, reason_beside
from gate.domain.rule_catalog import Kind, of_kind

# The SASS column names a function's largest base opcodes, this many, then any opcode a rule reads
# (`require_sass`): a fixed list of tensor-core opcodes read `BAR=2` for an FFMA/LDS kernel and hid
# what it was made of.
LARGEST_OPCODES = 6
FUNCTION_COLUMN = 60      # characters of a function's name in the static table's column
_OPCODE_RULES = frozenset(spec.rule for spec in of_kind(Kind.SASS))


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = indent + "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip(), *(fmt.format(*r).rstrip() for r in rows)]


def ruled_opcodes(rules: list[RuleRow]) -> list[str]:
    """The opcodes a rule of the table reads (`require_sass`'s list, its rows' threshold)."""
    named = [r.threshold for r in rules if r.rule in _OPCODE_RULES and isinstance(r.threshold, str)]
    return list(dict.fromkeys(op.strip() for text in named for op in text.split(",") if op.strip()))


def sass_cell(opcodes: dict[str, int], ruled: list[str], largest: int = LARGEST_OPCODES) -> str:
    """`FFMA=812 LDS=96 ... and 12 more opcodes`: the function's `largest` opcodes by count, then each
    opcode a rule reads (0 included: a missing one is what the rule fails on), and how many are not
    listed, so a short list never reads as the whole code."""
    ranked = sorted((op for op, n in opcodes.items() if n), key=lambda op: (-opcodes[op], op))
    shown = list(dict.fromkeys([*ranked[:largest], *ruled]))
    if not shown:
        return "-"
    text = " ".join(f"{op}={opcodes.get(op, 0)}" for op in shown)
    rest = len([op for op in ranked if op not in shown])
    return f"{text} \u2026 and {plural(rest, 'more opcode')}" if rest else text


def _static_table(functions: list[FunctionResources], ruled: list[str]) -> list[str]:
    """The static figures per function; a name longer than its column is cut there and written whole on
    the line above its row (a CUTLASS instance's demangled name runs to 2,266 characters: whole in the column, it
    pushed every figure of the table off the screen)."""
    names = [kernel_name(f.function) for f in functions]
    table = _table(["function", "arch", "regs", "smem_B", "stack_B", "spill_st_B", "spill_ld_B", "SASS"],
                   [[cut(name, FUNCTION_COLUMN), f.arch, str(f.registers), str(f.smem_bytes), str(f.stack_bytes),
                     str(f.spill_store_bytes), str(f.spill_load_bytes), sass_cell(f.sass_opcodes, ruled)]
                    for name, f in zip(names, functions)])
    lines = table[:1]
    for name, row in zip(names, table[1:]):
        lines += [f"  {name}:", row] if len(name) > FUNCTION_COLUMN else [row]
    return lines


def render(outcomes: list[GateOutcome], *, sha: str, base_sha: str | None) -> str:
    lines = [f"revision {sha}" + (f"  baseline {base_sha}" if base_sha else "  (no baseline)"), ""]
    for outcome in outcomes:
        report, result = outcome.report, outcome.result
        lines.append(f"{result.kernel}: {report.verdict.value.upper()}  {report.reason}")
        rules = [[r.rule, r.where or "-", r.outcome.value.replace("_", " "), _cell(r.value),
                  as_allowed(r, _cell(r.threshold)), _cell(r.baseline), _cell(r.delta), r.unit or "-",
                  reason_beside(r.outcome.value, r.reason) or "-"] for r in report.rules]
        lines += _table(["rule", "shape", "outcome", "value", "threshold", "baseline", "delta", "unit",
                         "reason"], rules)
        if result.bench is not None and result.bench.checked_calls:
            lines.append("  " + checked_calls_words(result.bench.checked_calls))
        hot = as_text(job_diffs(result))      # the source lines that gained stalls, conflicts, work
        if hot:
            lines += ["", *hot]
        static = result.candidate.static
        if static and static.functions:
            lines.append("")
            lines += _static_table(static.functions, ruled_opcodes(report.rules))
        for kind, path in outcome.artifacts:
            lines.append(f"  artifact {kind}: {path}")
        lines.append("")
    return "\n".join(lines) + "\n"
