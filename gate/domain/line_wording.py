"""The wording of a source-line diff: text for `gate run`, Markdown for the Check Run summary.

One place for how a gain reads ("+38.2 pt stall samples", "+4,063,232 bank-conflict wavefronts"),
so the CLI, the page and GitHub say the same thing. Pure and in the domain: notify and the pages
read it as well as the CLI.
"""

from __future__ import annotations

from gate.domain.source_lines import COUNTER_WORDS, COUNTERS, LineChange, LinesDiff


def gain_words(change: LineChange, compared: bool = True) -> str:
    """The gains worth naming: "+38.2 pt stall samples, +4,063,232 bank-conflict wavefronts"; without
    a baseline the line's own figures: "38.2 % of stall samples, 131,072 instructions"."""
    sign = "+" if compared else ""
    parts = []
    for c in COUNTERS:
        gain = change.gains.get(c, 0.0)
        if gain <= 0:
            continue
        if c == "stall_samples":
            if gain >= 0.1:
                parts.append(f"+{gain:.1f} pt {COUNTER_WORDS[c]}" if compared
                             else f"{gain:.1f} % of {COUNTER_WORDS[c]}")
        else:
            parts.append(f"{sign}{gain:,.0f} {COUNTER_WORDS[c]}")
    return ", ".join(parts) or "no gain"


def _heading(diff: LinesDiff) -> str:
    what = "instructions" if diff.by_instruction else "source lines"
    against = "against the baseline" if diff.compared else "hottest, no baseline profile"
    launch = " ".join(p for p in (diff.shape, diff.dtype) if p)
    return f"{diff.kernel}{f' [{launch}]' if launch else ''}: {what} ({against})"


def _place(change: LineChange, diff: LinesDiff) -> str:
    if diff.by_instruction and change.instructions:
        ins = change.instructions[0]
        where = f"+0x{ins.offset:04x} {ins.sass}"
        return f"{where} ({change.where})" if change.file else where
    moved = (f" (line {change.baseline_line} in the baseline)"
             if change.baseline_line not in (None, change.line) else "")
    return change.where + moved


def as_text(diffs: list[LinesDiff], indent: str = "  ") -> list[str]:
    """Lines for the CLI report; [] when there is nothing to show."""
    out: list[str] = []
    for diff in diffs:
        if not diff.changes:
            continue
        lead = "where it got slower" if diff.compared else "where the time goes"
        out.append(f"{indent}{lead}: {_heading(diff)}")
        for change in diff.changes:
            out.append(f"{indent}  {_place(change, diff)}  {gain_words(change, diff.compared)}")
            if change.text:
                out.append(f"{indent}      | {change.text}")
            if not diff.by_instruction:
                out += [f"{indent}      > +0x{i.offset:04x} {i.sass}" for i in change.instructions]
    return out


def as_markdown(diffs: list[LinesDiff], top: int = 3) -> str:
    """A Check Run summary section with the `top` lines over all launches; "" when none."""
    ranked = top_changes(diffs, top)
    if not ranked:
        return ""
    compared = all(diff.compared for diff, _ in ranked)
    title = ("Where it got slower (against the baseline)" if compared
             else "Hottest lines (no baseline profile to compare)")
    rows = [f"### {title}", ""]
    for diff, change in ranked:
        rows.append(f"- `{_place(change, diff)}` in `{diff.kernel}`: {gain_words(change, diff.compared)}")
        if change.text:
            rows.append(f"  `{change.text.replace('`', chr(39))}`")
    return "\n".join(rows) + "\n"


def top_changes(diffs: list[LinesDiff], top: int = 3) -> list[tuple[LinesDiff, LineChange]]:
    """The `top` changes over all launches, each source line once (at its largest score)."""
    best: dict[tuple[str, str, int, int], tuple[LinesDiff, LineChange]] = {}
    for diff in diffs:
        for change in diff.changes:
            offset = change.instructions[0].offset if diff.by_instruction and change.instructions else 0
            key = (diff.kernel, change.file, change.line, offset)
            if key not in best or change.score > best[key][1].score:
                best[key] = (diff, change)
    ranked = sorted(best.values(), key=lambda dc: (-dc[1].score, dc[1].file, dc[1].line))
    return ranked[:top]
