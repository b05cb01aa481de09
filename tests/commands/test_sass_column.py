"""`gate run`'s SASS column: the function's largest opcodes and those a rule reads, and how many more."""

from gate.commands.run_report import render, ruled_opcodes, sass_cell
from gate.domain import JobResult, SideResults, StageStatus, Verdict, VerdictReport
from gate.domain.job import GateOutcome
from gate.domain.results import FunctionResources, StaticResult
from gate.domain.verdict import RuleOutcome, RuleRow

FFMA_KERNEL = {"FFMA": 812, "LDS": 96, "IMAD": 64, "LDG": 16, "STG": 8, "BAR": 2, "ISETP": 12,
               "BRA": 9, "EXIT": 1, "MOV": 30}


def test_a_scalar_kernel_reads_as_what_it_is_made_of():
    cell = sass_cell(FFMA_KERNEL, [])
    assert cell.startswith("FFMA=812 LDS=96 IMAD=64 MOV=30 LDG=16 ISETP=12")
    assert cell.endswith("\u2026 and 4 more opcodes")
    assert "HMMA" not in cell


def test_an_opcode_a_rule_reads_is_listed_even_at_zero():
    cell = sass_cell(FFMA_KERNEL, ["HMMA", "BAR"])
    assert "HMMA=0" in cell and "BAR=2" in cell
    assert cell.endswith("\u2026 and 3 more opcodes")


def test_a_short_histogram_is_whole_and_says_nothing_more():
    assert sass_cell({"HMMA": 4, "LDSM": 2}, []) == "HMMA=4 LDSM=2"
    assert sass_cell({}, []) == "-"


def test_the_opcodes_require_sass_reads_come_from_its_rows():
    rows = [RuleRow("require_sass", RuleOutcome.PASS, "sm_90: HMMA x4", value="HMMA x4", threshold="HMMA,LDSM"),
            RuleRow("max_registers", RuleOutcome.PASS, "ok", value=40, threshold=255)]
    assert ruled_opcodes(rows) == ["HMMA", "LDSM"]


def test_the_report_shows_the_column_with_the_required_opcode():
    static = StaticResult(StageStatus.PASSED, functions=[
        FunctionResources("_Z4gemmPf", "sm_90", 40, 0, 0, 0, 0, sass_opcodes=dict(FFMA_KERNEL))])
    rows = [RuleRow("require_sass", RuleOutcome.FAIL, "sm_90: missing HMMA", value="HMMA x0", threshold="HMMA")]
    outcome = GateOutcome(JobResult("gemm", SideResults("c" * 40, static=static), None),
                          VerdictReport(Verdict.REJECT, "reject: require_sass", rows))
    text = render([outcome], sha="c" * 40, base_sha=None)
    line = next(x for x in text.splitlines() if x.strip().startswith("gemm ") or x.strip().startswith("_Z4gemm"))
    assert "FFMA=812" in line and "HMMA=0" in line and "\u2026 and 4 more opcodes" in line


def test_the_rule_table_says_an_outcome_once_and_an_increase_as_one():
    rows = [RuleRow("max_registers_increase", RuleOutcome.PASS, "sm_90: +2 <= +8", value=40, threshold=8,
                    baseline=38, delta=2, unit="registers"),
            RuleRow("min_tensor_pipe_pct", RuleOutcome.NOT_RUN, "not run: no CUDA device", unit="%")]
    text = render([GateOutcome(JobResult("gemm", SideResults("c" * 40), None),
                               VerdictReport(Verdict.INCOMPLETE, "incomplete", rows))], sha="c" * 40, base_sha=None)
    increase = next(x for x in text.splitlines() if "max_registers_increase" in x).split()
    assert increase[3:6] == ["40", "+8", "38"]
    not_run = next(x for x in text.splitlines() if "min_tensor_pipe_pct" in x)
    assert "not run" in not_run and "not_run" not in not_run and not_run.count("not run") == 1
    assert not_run.rstrip().endswith("no CUDA device")


def test_a_long_template_name_is_cut_in_its_column_and_written_whole_above_its_row():
    name = "Kernel<Gemm<MmaPipelined<" + ", ".join(f"GemmShape<{i}, 128, 8>" for i in range(60)) + ">>>"
    static = StaticResult(StageStatus.PASSED, functions=[
        FunctionResources(name, "sm_90", 137, 0, 0, 0, 0, sass_opcodes=dict(FFMA_KERNEL)),
        FunctionResources("_Z4gemmPf", "sm_90", 40, 0, 0, 0, 0, sass_opcodes={"HMMA": 4})])
    outcome = GateOutcome(JobResult("gemm", SideResults("c" * 40, static=static), None),
                          VerdictReport(Verdict.ACCEPT, "accept", []))
    lines = render([outcome], sha="c" * 40, base_sha=None).splitlines()
    header = next(i for i, x in enumerate(lines) if x.strip().startswith("function "))
    whole, row, short = lines[header + 1], lines[header + 2], lines[header + 3]
    assert whole.strip() == f"{name}:"
    assert row.strip().startswith(name[:59] + "\u2026") and " 137 " in row and "FFMA=812" in row
    assert len(lines[header]) < 200 and len(row) < 200 and " 40 " in short
