"""The text report of `gate run`: per kernel the verdict, its rule table and the static figures."""

from __future__ import annotations

from gate.domain.job import GateOutcome
from gate.domain.results import FunctionResources
from gate.nvidia.symbols import kernel_name
from gate.verdict.lines import job_diffs
from gate.domain.line_wording import as_text
from gate.domain.wording import checked_calls_words

# Opcodes worth a glance: tensor cores (HMMA/HGMMA/IMMA/QGMMA), ldmatrix, cp.async, spills, barriers.
KEY_OPCODES = ("HMMA", "HGMMA", "IMMA", "QGMMA", "LDSM", "LDGSTS", "STL", "LDL", "BAR")


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


def _static_rows(functions: list[FunctionResources]) -> list[list[str]]:
    rows = []
    for f in functions:
        sass = " ".join(f"{op}={f.sass_opcodes[op]}" for op in KEY_OPCODES if f.sass_opcodes.get(op))
        name = kernel_name(f.function)
        rows.append([name, f.arch, str(f.registers), str(f.smem_bytes), str(f.stack_bytes),
                     str(f.spill_store_bytes), str(f.spill_load_bytes), sass or "-"])
    return rows


def render(outcomes: list[GateOutcome], *, sha: str, base_sha: str | None) -> str:
    lines = [f"revision {sha}" + (f"  baseline {base_sha}" if base_sha else "  (no baseline)"), ""]
    for outcome in outcomes:
        report, result = outcome.report, outcome.result
        lines.append(f"{result.kernel}: {report.verdict.value.upper()}  {report.reason}")
        rules = [[r.rule, r.where or "-", r.outcome.value, _cell(r.value), _cell(r.threshold),
                  _cell(r.baseline), _cell(r.delta), r.unit or "-", r.reason] for r in report.rules]
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
            lines += _table(["function", "arch", "regs", "smem_B", "stack_B", "spill_st_B", "spill_ld_B",
                             "SASS"], _static_rows(static.functions))
        for kind, path in outcome.artifacts:
            lines.append(f"  artifact {kind}: {path}")
        lines.append("")
    return "\n".join(lines) + "\n"
