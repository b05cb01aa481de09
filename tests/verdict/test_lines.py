"""The source-line diff: which lines gained stalls, conflicts or instructions, and how that reads."""

from gate.domain.source_lines import Instruction, KernelSourceProfile, LineCounters, SourceLine
from gate.nvidia.ncu_report import read_launches
from gate.nvidia.source_counters import source_profile
from gate.domain.line_wording import as_markdown, as_text, top_changes
from gate.verdict.lines import MIN_SHARE, diff_launch, diff_profiles
from tests.golden import assert_golden

FILE = "kernels/flashcore/wmma.cu"


def counters(stalls=0.0, conflicts=0.0, sectors=0.0, inst=0.0) -> LineCounters:
    return LineCounters(stalls, conflicts, sectors, inst)


def launch(lines: list[SourceLine], instructions: list[Instruction] = ()) -> KernelSourceProfile:
    totals = LineCounters()
    for ln in lines:
        totals.add(ln.counters)
    return KernelSourceProfile("flashcore_mma_fwd_kernel", "B1 H8 S512 D64", "fp16", True, totals,
                               lines, list(instructions))


def baseline() -> KernelSourceProfile:
    return launch([
        SourceLine(FILE, 120, "cp_async_16(&ks[r * kRow + c], k + off);", counters(100, 0, 4000, 1000)),
        SourceLine(FILE, 140, "ldmatrix_x4(kf, &ks[(lane % 16) * kRow + k0]);", counters(300, 0, 0, 2000)),
        SourceLine(FILE, 160, "float m = fmaxf(m_old, rowmax(s));", counters(200, 0, 0, 3000)),
        SourceLine(FILE, 170, "acc = mma(p, vf, acc);", counters(400, 0, 0, 4000)),
    ])


def conflicting_candidate() -> KernelSourceProfile:
    """Padding dropped and a comment line added above: every line moved down by one, and the
    ldmatrix line conflicts."""
    ldsm = Instruction(0x3a0, "LDSM.16.M88.4 R12, [R40]", FILE, 141, counters(500, 90_000, 0, 2000))
    return launch([
        SourceLine(FILE, 121, "cp_async_16(&ks[r * kRow + c], k + off);", counters(100, 0, 4000, 1000)),
        SourceLine(FILE, 141, "ldmatrix_x4(kf, &ks[(lane % 16) * kRow + k0]);", counters(500, 90_000, 0, 2000)),
        SourceLine(FILE, 161, "float m = fmaxf(m_old, rowmax(s));", counters(150, 0, 0, 3000)),
        SourceLine(FILE, 171, "acc = mma(p, vf, acc);", counters(250, 0, 0, 4000)),
    ], [ldsm])


def extra_work_candidate() -> KernelSourceProfile:
    """A new line recomputes the row statistics: new instructions and stalls, nothing else moves."""
    return launch([
        SourceLine(FILE, 120, "cp_async_16(&ks[r * kRow + c], k + off);", counters(100, 0, 4000, 1000)),
        SourceLine(FILE, 140, "ldmatrix_x4(kf, &ks[(lane % 16) * kRow + k0]);", counters(300, 0, 0, 2000)),
        SourceLine(FILE, 160, "float m = fmaxf(m_old, rowmax(s));", counters(200, 0, 0, 3000)),
        SourceLine(FILE, 161, "float l2 = rowsum(expf(s - m));  // recomputed for clarity",
                   counters(400, 0, 0, 6000)),
        SourceLine(FILE, 170, "acc = mma(p, vf, acc);", counters(400, 0, 0, 4000)),
    ])


def test_conflicts_are_named_on_the_moved_line():
    diff = diff_launch(conflicting_candidate(), baseline())
    first = diff.changes[0]
    assert (first.line, first.baseline_line) == (141, 140)
    assert first.gains["smem_excess_wavefronts"] == 90_000
    assert first.instructions[0].opcode == "LDSM.16.M88.4"
    # the other lines only moved: their counts are the baseline's, so none is named
    assert [c.line for c in diff.changes] == [141]


def test_extra_work_names_the_new_line():
    diff = diff_launch(extra_work_candidate(), baseline())
    assert [c.line for c in diff.changes] == [161]
    assert diff.changes[0].baseline_line is None
    assert diff.changes[0].gains["inst_executed"] == 6000


def test_stall_samples_compare_as_shares_not_counts():
    """Twice the samples everywhere (a longer run, a finer interval) is no change."""
    base = baseline()
    doubled = launch([SourceLine(ln.file, ln.line, ln.text, counters(2 * ln.counters.stall_samples, 0, 4000 if
                      ln.line == 120 else 0, ln.counters.inst_executed)) for ln in base.lines])
    assert diff_launch(doubled, base).changes == []


def test_small_gains_are_not_named():
    base = baseline()
    cand = launch([SourceLine(ln.file, ln.line, ln.text, counters(
        ln.counters.stall_samples, 0, ln.counters.global_sectors,
        ln.counters.inst_executed + (1 if ln.line == 170 else 0))) for ln in base.lines])
    assert 1 / cand.totals.inst_executed < MIN_SHARE
    assert diff_launch(cand, base).changes == []


def test_launches_pair_by_kernel_shape_and_dtype():
    other = KernelSourceProfile("other_kernel", "B1", "fp16", True)
    diffs = diff_profiles([conflicting_candidate(), other], [baseline()])
    assert [d.kernel for d in diffs] == ["flashcore_mma_fwd_kernel"]   # nothing to compare the other to


def test_without_a_baseline_profile_the_hottest_lines_are_named():
    (diff,) = diff_profiles([extra_work_candidate()], None)
    assert not diff.compared
    assert diff.changes[0].line == 161        # the largest share of instructions and stalls


def test_the_text_report_matches_golden():
    diffs = diff_profiles([conflicting_candidate()], [baseline()]) + \
        diff_profiles([extra_work_candidate()], [baseline()])
    assert_golden("lines_report.txt", "\n".join(as_text(diffs)) + "\n")


def test_the_check_run_section_matches_golden():
    diffs = diff_profiles([conflicting_candidate(), extra_work_candidate()], [baseline(), baseline()])
    assert len(top_changes(diffs)) == 2
    assert_golden("lines_check_run.md", as_markdown(diffs))


def test_the_fixture_names_the_conflicting_loads_instruction_by_instruction(ncu_fixture):
    """The H200 fixture: the unpadded transpose against the padded one, no line information."""
    _, unpadded, padded = read_launches(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    cand = source_profile("transpose_smem", "", "", unpadded.instructions, None)
    base = source_profile("transpose_smem", "", "", padded.instructions, None)
    (diff,) = diff_profiles([cand], [base])
    assert diff.by_instruction and diff.compared
    named = [c for c in diff.changes if c.gains["smem_excess_wavefronts"] > 0]
    assert [c.instructions[0].opcode for c in named] == ["LDS"] * 4
    assert_golden("lines_fixture_transpose.txt", "\n".join(as_text([diff])) + "\n")


def test_nothing_to_say_renders_nothing():
    assert as_text(diff_profiles([baseline()], [baseline()])) == []
    assert as_markdown([]) == ""


def test_a_stall_share_change_within_sampling_noise_is_not_named():
    """20 of 100 samples against 10 of 100 is within 3 standard errors; with 100 times the samples
    the same shares are a real change."""
    def one(samples_on_line: float, total: float) -> KernelSourceProfile:
        return launch([SourceLine(FILE, 10, "hot();", counters(samples_on_line, 0, 0, 100)),
                       SourceLine(FILE, 11, "rest();", counters(total - samples_on_line, 0, 0, 100))])
    assert diff_launch(one(20, 100), one(10, 100)).changes == []
    (change,) = diff_launch(one(2000, 10_000), one(1000, 10_000)).changes
    assert change.line == 10 and round(change.gains["stall_samples"], 6) == 10.0
