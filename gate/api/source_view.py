"""The revision page's source view: per profiled launch, the lines that got slower, highlighted among
the lines around them that the profile counted.

Built from the stored profile stages (decoded once by the read model into `ProfileResult`s), so a page shows the same
diff the CLI printed and the Check Run carried, with no server path: the files are named as they
are in the checkout, and the text was read from the checkout in the GPU child.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gate.domain.line_wording import gain_words
from gate.domain.results import ProfileResult, StageStatus
from gate.domain.source_lines import KernelSourceProfile, LinesDiff
from gate.verdict.lines import diff_profiles

CONTEXT_LINES = 4          # counted lines shown around a hot line, each side


@dataclass
class SourceRow:
    file: str
    line: int
    text: str
    stall_pct: float          # share of the launch's stall samples on this line
    conflicts: float          # bank-conflict (excess shared) wavefronts
    instructions: float
    hot: bool = False         # one of the diff's named lines
    why: str = ""             # its gains, in the CLI's words
    gap_before: bool = False  # lines were left out above this one


@dataclass
class SourceView:
    anchor: str               # element id, linked from the deciding rule
    kernel: str
    launch: str               # "shape dtype"
    heading: str
    rows: list[SourceRow] = field(default_factory=list)


def _passed(profile: ProfileResult | None) -> ProfileResult | None:
    return profile if profile is not None and profile.status is StageStatus.PASSED else None


def _rows(profile: KernelSourceProfile, diff: LinesDiff) -> list[SourceRow]:
    hot = {(c.file, c.line): c for c in diff.changes}
    near = {(f, n) for f, line in hot for n in range(line - CONTEXT_LINES, line + CONTEXT_LINES + 1)}
    samples = profile.totals.stall_samples
    rows: list[SourceRow] = []
    for ln in profile.lines:        # sorted by file and line
        if (ln.file, ln.line) not in near:
            continue
        change = hot.get((ln.file, ln.line))
        previous = rows[-1] if rows else None
        gap = previous is not None and (previous.file != ln.file or previous.line + 1 != ln.line)
        rows.append(SourceRow(ln.file, ln.line, ln.text,
                              100.0 * ln.counters.stall_samples / samples if samples else 0.0,
                              ln.counters.smem_excess_wavefronts, ln.counters.inst_executed,
                              change is not None, gain_words(change, diff.compared) if change else "", gap))
    return rows


def source_views(job_id: int, candidate: ProfileResult | None, baseline: ProfileResult | None) -> list[SourceView]:
    """The source views of one job from its profile stages, as the read model decoded them (a payload
    an older gate stored that no longer decodes is no result there); [] without source counters (no
    profile, or one from a build without -lineinfo: the CLI lists instructions then)."""
    cand, base = _passed(candidate), _passed(baseline)
    if cand is None or not cand.source:
        return []
    diffs = diff_profiles(cand.source, base.source if base and base.source else None)
    views = []
    for index, (profile, diff) in enumerate(zip(_paired(cand.source, diffs), diffs)):
        if diff.by_instruction or not diff.changes:
            continue
        what = "got slower against the baseline" if diff.compared else "hottest (the baseline was not profiled)"
        views.append(SourceView(f"lines-{job_id}-{index}", diff.kernel,
                                " ".join(p for p in (diff.shape, diff.dtype) if p),
                                f"Source lines that {what}", _rows(profile, diff)))
    return views


def _paired(launches: list[KernelSourceProfile], diffs: list[LinesDiff]) -> list[KernelSourceProfile]:
    """The candidate launch behind each diff (diff_profiles skips launches it cannot compare)."""
    remaining = list(launches)
    paired = []
    for diff in diffs:
        launch = next(p for p in remaining if (p.kernel, p.shape, p.dtype) == (diff.kernel, diff.shape, diff.dtype))
        remaining.remove(launch)
        paired.append(launch)
    return paired
