"""Per-source-line and per-SASS-instruction counters of one profiled launch (stdlib only).

Nsight Compute's SourceCounters section counts per SASS instruction; `-lineinfo` maps each to a
source line. A launch keeps the per-line totals of every line with a count (what a diff against the
baseline needs) and its top instructions, each with its line, so a diff can still point at code when
lines moved. `LinesDiff` is what `gate.verdict.lines` makes of a candidate launch against the
baseline's. The counters, per launch and summed over a line's instructions (docs/source-lines.md):
`stall_samples` (`smsp__pcsamp_sample_count`; their number follows the kernel's length and ncu's
sampling interval, so they compare only as a share of the launch's), `smem_excess_wavefronts` (bank
conflicts, `derived__memory_l1_wavefronts_shared_excessive`), `global_sectors`
(`memory_l2_theoretical_sectors_global`) and `inst_executed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

COUNTERS = ("stall_samples", "smem_excess_wavefronts", "global_sectors", "inst_executed")
NO_FILE = ""            # an instruction without line information (built without -lineinfo)


@dataclass
class LineCounters:
    stall_samples: float = 0.0
    smem_excess_wavefronts: float = 0.0
    global_sectors: float = 0.0
    inst_executed: float = 0.0

    def add(self, other: LineCounters) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def any(self) -> bool:
        return any(getattr(self, name) for name in COUNTERS)


@dataclass
class SourceLine:
    file: str                       # relative to the checkout; a basename for files outside it
    line: int                       # 1-based; 0 when the instruction has no line information
    text: str = ""                  # the line's source, stripped; "" when not in the checkout
    counters: LineCounters = field(default_factory=LineCounters)


@dataclass
class Instruction:
    offset: int                     # bytes from the kernel's first instruction (the report's PC - entry)
    sass: str                       # "@!P0 LDS.U.128 R8, [R2+0x10]"
    file: str = NO_FILE
    line: int = 0
    counters: LineCounters = field(default_factory=LineCounters)

    @property
    def opcode(self) -> str:
        """The mnemonic without predicate: "@!P0 LDS.U.128 R8, ..." -> "LDS.U.128"."""
        words = [w for w in self.sass.split() if not w.startswith("@")]
        return words[0].rstrip(";") if words else ""


@dataclass
class KernelSourceProfile:
    kernel: str
    shape: str = ""
    dtype: str = ""
    line_info: bool = False          # False: the binary had no -lineinfo, only instructions are known
    totals: LineCounters = field(default_factory=LineCounters)   # the whole launch
    lines: list[SourceLine] = field(default_factory=list)        # every line with a count
    instructions: list[Instruction] = field(default_factory=list)  # the top instructions only


COUNTER_WORDS = {         # what each gain is called where it is shown
    "stall_samples": "stall samples",
    "smem_excess_wavefronts": "bank-conflict wavefronts",
    "global_sectors": "global sectors",
    "inst_executed": "instructions",
}


@dataclass
class LineChange:
    file: str
    line: int                        # in the candidate; 0 for an instruction without line info
    text: str                        # the candidate's source line ("" when unknown)
    baseline_line: int | None        # where the matched line was in the baseline; None: new or no baseline
    gains: dict[str, float]          # counter -> gain (stall_samples in percentage points of samples)
    score: float                     # the largest gain as a share of its counter's total (0..1)
    instructions: list[Instruction] = field(default_factory=list)   # the candidate's SASS behind it

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else "(no line information)"


@dataclass
class LinesDiff:
    kernel: str
    shape: str
    dtype: str
    compared: bool                   # False: no baseline profile, the candidate's hottest lines
    by_instruction: bool             # True: no line information, instructions were compared
    changes: list[LineChange] = field(default_factory=list)
