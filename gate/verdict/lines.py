"""Where it got slower: the candidate's source counters against the baseline's, per source line.

Pure: domain types in, `LinesDiff` (gate.domain.source_lines) out. Launches are paired by (kernel,
shape, dtype), in launch order; lines are matched by file and source text (the n-th occurrence of
the same text; by number when the text is unknown), or, without `-lineinfo` on either side, the
instructions by opcode sequence (difflib): docs/source-lines.md, "The diff", says why.

Stall samples compare as a share of the launch's samples (the raw number follows the kernel's length
and ncu's sampling interval), and a change within sampling noise (binomial standard errors of both
shares) counts as none; the other counters compare as raw counts, exact for the same shape. A line's
score is its largest gain as a share of that counter's total; only lines that gained at least
`MIN_SHARE` of some counter are named. Without a baseline profile the candidate's hottest lines
(largest share of stall samples) are named instead, and `compared` says so.
"""

from __future__ import annotations

import difflib
import math
from collections import defaultdict

from gate.domain.results import JobResult, StageStatus
from gate.domain.source_lines import (
    COUNTERS,
    Instruction,
    KernelSourceProfile,
    LineChange,
    LineCounters,
    LinesDiff,
    SourceLine,
)

MIN_SHARE = 0.02          # a gain below 2 % of the launch's total of every counter is noise here
TOP_LINES = 5
STALL_NOISE_SE = 3.0      # a stall-share change within 3 standard errors of sampling is not named


def _change(now: LineCounters, before: LineCounters | None, cand: KernelSourceProfile,
            base: KernelSourceProfile | None) -> tuple[dict[str, float], float]:
    """A line's (or instruction's) gains per counter, and its score."""
    base_total = base.totals if base else None
    gains = {c: getattr(now, c) - (getattr(before, c) if before else 0.0) for c in COUNTERS}
    gains["stall_samples"] = _stall_gain(now.stall_samples, cand.totals.stall_samples,
                                         before.stall_samples if before else 0.0,
                                         base_total.stall_samples if base_total else None)
    return gains, _score(gains, cand.totals, base_total)


def _stall_gain(now: float, now_total: float, before: float, before_total: float | None) -> float:
    """Percentage points of the launch's stall samples the line gained; 0 within sampling noise, so a short
    kernel's few samples name nothing. Without a baseline: the line's own share."""
    share = now / now_total if now_total else 0.0
    if before_total is None:
        return 100.0 * share
    share_before = before / before_total if before_total else 0.0
    variance = (share * (1 - share) / now_total if now_total else 0.0) + \
        (share_before * (1 - share_before) / before_total if before_total else 0.0)
    if abs(share - share_before) <= STALL_NOISE_SE * math.sqrt(variance):
        return 0.0
    return 100.0 * (share - share_before)


def _score(gains: dict[str, float], cand_total: LineCounters, base_total: LineCounters | None) -> float:
    if base_total is None:
        # Nothing to compare: where the time goes, by stall samples (instructions when unsampled).
        if cand_total.stall_samples:
            return gains["stall_samples"] / 100.0
        return gains["inst_executed"] / cand_total.inst_executed if cand_total.inst_executed else 0.0
    shares = []
    for c, gain in gains.items():
        if c == "stall_samples":
            shares.append(gain / 100.0)
            continue
        total = max(getattr(cand_total, c), getattr(base_total, c))
        if total:
            shares.append(gain / total)
    return max(shares, default=0.0)


def _line_key_lists(lines: list[SourceLine]) -> dict[tuple[str, str | int, int], SourceLine]:
    """Key each line by (file, text or number, n-th occurrence of that text in the file)."""
    seen: dict[tuple[str, str | int], int] = defaultdict(int)
    keyed = {}
    for ln in sorted(lines, key=lambda x: (x.file, x.line)):
        ident: str | int = ln.text if ln.text else ln.line
        n = seen[(ln.file, ident)]
        seen[(ln.file, ident)] += 1
        keyed[(ln.file, ident, n)] = ln
    return keyed


def _by_line(cand: KernelSourceProfile, base: KernelSourceProfile | None) -> list[LineChange]:
    base_lines = _line_key_lists(base.lines) if base else {}
    changes = []
    for key, ln in _line_key_lists(cand.lines).items():
        before = base_lines.get(key)
        gains, score = _change(ln.counters, before.counters if before else None, cand, base)
        behind = sorted((i for i in cand.instructions if (i.file, i.line) == (ln.file, ln.line)),
                        key=lambda i: -max(getattr(i.counters, c) for c in COUNTERS))
        changes.append(LineChange(ln.file, ln.line, ln.text, before.line if before else None, gains, score,
                                  behind[:3]))
    return changes


def _by_instruction(cand: KernelSourceProfile, base: KernelSourceProfile | None) -> list[LineChange]:
    ours = sorted(cand.instructions, key=lambda i: i.offset)
    theirs = sorted(base.instructions, key=lambda i: i.offset) if base else []
    matched: dict[int, Instruction] = {}
    matcher = difflib.SequenceMatcher(a=[i.opcode for i in theirs], b=[i.opcode for i in ours],
                                      autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            matched[block.b + k] = theirs[block.a + k]
    changes = []
    for index, ins in enumerate(ours):
        before = matched.get(index)
        gains, score = _change(ins.counters, before.counters if before else None, cand, base)
        changes.append(LineChange(ins.file, ins.line, "", None, gains, score, [ins]))
    return changes


def diff_launch(cand: KernelSourceProfile, base: KernelSourceProfile | None,
                top: int = TOP_LINES) -> LinesDiff:
    """The `top` lines (or instructions) of `cand` that gained most against `base`."""
    by_instruction = not cand.line_info or (base is not None and not base.line_info)
    changes = _by_instruction(cand, base) if by_instruction else _by_line(cand, base)
    named = [c for c in changes if c.score >= MIN_SHARE]
    named.sort(key=lambda c: (-c.score, c.file, c.line, c.instructions[0].offset if c.instructions else 0))
    return LinesDiff(cand.kernel, cand.shape, cand.dtype, base is not None, by_instruction, named[:top])


def diff_profiles(candidate: list[KernelSourceProfile], baseline: list[KernelSourceProfile] | None,
                  top: int = TOP_LINES) -> list[LinesDiff]:
    """One diff per candidate launch, against the baseline launch of the same kernel, shape and
    dtype (the n-th with the n-th); `baseline` None: not profiled, the candidate's hottest lines."""
    pool: dict[tuple[str, str, str], list[KernelSourceProfile]] = defaultdict(list)
    for launch in baseline or []:
        pool[(launch.kernel, launch.shape, launch.dtype)].append(launch)
    diffs = []
    for launch in candidate:
        same = pool.get((launch.kernel, launch.shape, launch.dtype))
        base = same.pop(0) if same else None
        if baseline is not None and base is None:
            continue      # a launch the baseline did not have: nothing to compare, not "hot"
        diffs.append(diff_launch(launch, base, top))
    return diffs


def job_diffs(result: JobResult, top: int = TOP_LINES) -> list[LinesDiff]:
    """The diffs of one job: its candidate profile against its baseline profile when both passed
    with source counters; the candidate's hottest lines when the baseline was not profiled."""
    candidate = result.candidate.profile
    if candidate is None or candidate.status is not StageStatus.PASSED or not candidate.source:
        return []
    base = result.baseline.profile if result.baseline else None
    usable = base is not None and base.status is StageStatus.PASSED and bool(base.source)
    return diff_profiles(candidate.source, base.source if usable and base else None, top)
