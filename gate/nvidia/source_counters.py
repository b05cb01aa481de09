"""Nsight Compute's per-instruction source counters, read from a report and folded into source lines.

In a report the `SourceCounters` section's counters are instanced metrics: one value per SASS
instruction, keyed by its address (PC); `IAction.source_info(pc)` gives its file and line when the
binary was built with `-lineinfo` (the tests' fixture report was not). `read_instructions` alone
touches `ncu_report` (in the isolated reader process); `source_profile` is pure but for reading the
few source lines it keeps, from the checkout only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from gate.domain.source_lines import COUNTERS, NO_FILE, Instruction, KernelSourceProfile, LineCounters, SourceLine

SECTION = "SourceCounters"
# Which instanced metric gives each counter of `gate.domain.source_lines.COUNTERS`.
METRICS: dict[str, str] = {
    "stall_samples": "smsp__pcsamp_sample_count",
    "smem_excess_wavefronts": "derived__memory_l1_wavefronts_shared_excessive",
    "global_sectors": "memory_l2_theoretical_sectors_global",
    "inst_executed": "inst_executed",
}
assert tuple(METRICS) == COUNTERS, "one metric per counter, in the domain's order"
TOP_INSTRUCTIONS = 40     # kept per launch: enough to name the SASS behind the top lines of a diff
_ADDRESS = re.compile(r"0x([0-9a-f]{9,})")   # a branch target: an absolute address in the SASS text
MAX_TEXT = 200            # characters of a line's text kept (a generated or minified line can be huge)
MAX_LINES = 400           # kept per launch; a kernel with its inlined headers rarely has more lines with counts


@dataclass
class RawInstruction:
    """One instruction as a report holds it (absolute PC, file as the compiler saw it)."""

    pc: int
    sass: str
    file: str = NO_FILE
    line: int = 0
    values: dict[str, float] = field(default_factory=dict)    # counter name -> value


def read_instructions(action: object) -> list[RawInstruction]:
    """Every instruction with a source counter in `action` (an `ncu_report` IAction); [] without the section."""
    by_pc: dict[int, RawInstruction] = {}
    for counter, metric_name in METRICS.items():
        metric = action.metric_by_name(metric_name)  # type: ignore[attr-defined]
        if metric is None or not metric.has_value() or metric.num_instances() == 0:
            continue
        pcs = metric.correlation_ids()
        for i in range(metric.num_instances()):
            pc = int(pcs.as_uint64(i))
            record = by_pc.get(pc)
            if record is None:
                record = by_pc[pc] = _instruction(action, pc)
            record.values[counter] = record.values.get(counter, 0.0) + float(metric.as_double(i))
    return [by_pc[pc] for pc in sorted(by_pc)]


def _instruction(action: object, pc: int) -> RawInstruction:
    sass = " ".join(str(action.sass_by_pc(pc) or "").split())  # type: ignore[attr-defined]
    info = action.source_info(pc)  # type: ignore[attr-defined]
    if info is None:
        return RawInstruction(pc, sass)
    return RawInstruction(pc, sass, str(info.file_name()), int(info.line()))


def shown_file(file: str, checkout: Path | None) -> tuple[str, Path | None]:
    """The name a user sees for a file of the line table, and the checkout file to read its lines from
    (None: outside the checkout; shown by its base name only, so no server path reaches a page).

    nvcc records the absolute path, with no option to map it, and a cached object was compiled in an
    earlier job's checkout, gone since. Its key holds the sources' contents and relative paths, so the
    longest tail of the recorded path that names a file here is that file. A recorded file that still
    exists (the other side's checkout, a toolkit header) maps only to an identical file here."""
    if not file:
        return NO_FILE, None
    path = PurePosixPath(file)
    if checkout is None:
        return (file if not path.is_absolute() else path.name), None
    root = checkout.resolve()

    def inside(candidate: Path) -> Path | None:
        candidate = candidate.resolve()
        return candidate if candidate.is_relative_to(root) and candidate.is_file() else None

    if not path.is_absolute():
        found = inside(root / file)
    elif (found := inside(Path(file))) is None:
        recorded = Path(file)
        tails = (PurePosixPath(*path.parts[i:]) for i in range(1, len(path.parts)))
        found = next((hit for tail in tails if (hit := inside(root / tail)) is not None
                      and (not recorded.is_file() or hit.read_bytes() == recorded.read_bytes())), None)
    if found is None:
        return path.name, None
    return found.relative_to(root).as_posix(), found


def _score(counters: LineCounters, totals: LineCounters) -> float:
    """The largest share of the launch's total that this line or instruction holds, any counter."""
    return max((getattr(counters, c) / getattr(totals, c) for c in COUNTERS if getattr(totals, c)),
               default=0.0)


def source_profile(kernel: str, shape: str, dtype: str, raw: list[RawInstruction],
                   checkout: Path | None) -> KernelSourceProfile:
    """The launch's per-line totals and top instructions, with the text of lines in `checkout`."""
    entry = min((r.pc for r in raw), default=0)
    totals = LineCounters()
    names: dict[str, tuple[str, Path | None]] = {}
    lines: dict[tuple[str, int], SourceLine] = {}
    instructions = []
    for r in raw:
        counters = LineCounters(**{c: r.values.get(c, 0.0) for c in COUNTERS})
        totals.add(counters)
        if r.file not in names:     # resolved once per file, not per instruction
            names[r.file] = shown_file(r.file, checkout)
        shown, _ = names[r.file]
        instructions.append(Instruction(r.pc - entry, _relative(r.sass, entry), shown, r.line, counters))
        key = (shown, r.line)
        if key not in lines:
            lines[key] = SourceLine(shown, r.line)
        lines[key].counters.add(counters)
    texts = _line_texts({name: path for name, path in names.values() if path is not None},
                        [key for key in lines])
    for key, source_line in lines.items():
        source_line.text = texts.get(key, "")
    kept_lines = sorted((ln for ln in lines.values() if ln.counters.any()),
                        key=lambda ln: -_score(ln.counters, totals))[:MAX_LINES]
    # Without line information the instructions are all there is to compare: keep as many as lines.
    keep = TOP_INSTRUCTIONS if any(r.file for r in raw) else MAX_LINES
    top = sorted(instructions, key=lambda ins: -_score(ins.counters, totals))[:keep]
    return KernelSourceProfile(
        kernel=kernel, shape=shape, dtype=dtype,
        line_info=any(r.file for r in raw), totals=totals,
        lines=sorted(kept_lines, key=lambda ln: (ln.file, ln.line)),
        instructions=sorted(top, key=lambda ins: ins.offset),
    )


def _relative(sass: str, entry: int) -> str:
    """Branch targets as offsets from the kernel's entry, like the instructions' own offsets: the
    absolute address differs between two launches of the same code."""
    def offset(match: re.Match[str]) -> str:
        value = int(match.group(1), 16)
        return f"+0x{value - entry:04x}" if value >= entry else match.group(0)
    return _ADDRESS.sub(offset, sass)


def _line_texts(files: dict[str, Path], keys: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    texts: dict[tuple[str, int], str] = {}
    for name, path in files.items():
        source = path.read_text(errors="replace").splitlines()
        for file, line in keys:
            if file == name and 0 < line <= len(source):
                texts[(file, line)] = line_text(source, line)[:MAX_TEXT]
    return texts


# A line ending so is the end of a statement (or a block's edge): the next line starts a new one.
_STATEMENT_ENDS = (";", "{", "}", ":")
STATEMENT_LOOKBACK = 6


def line_text(source: list[str], line: int) -> str:
    """The text of 1-based `line`; where it continues a statement begun on an earlier line, that
    statement's first line, " … ", then this one. The compiler puts an instruction on the line where
    its statement ends: an `asm volatile("ldmatrix...")` over three lines is attributed to
    `: "r"(addr));`, which names nothing (seen on the H200 for FlashCore's ldsm_x4)."""
    text = source[line - 1].strip()
    first = line
    while first > 1 and line - first < STATEMENT_LOOKBACK:
        before = source[first - 2].strip()
        if not before or before.endswith(_STATEMENT_ENDS) or before.startswith(("#", "//", "/*", "*")):
            break
        first -= 1
    return text if first == line else f"{source[first - 1].strip()} … {text}"
