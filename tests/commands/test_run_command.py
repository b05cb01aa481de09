import io
import time

import pytest

from gate.commands.run import progress
from gate.commands.run_report import render
from gate.domain import (
    FunctionResources,
    JobResult,
    RuleOutcome,
    RuleRow,
    SideResults,
    StageStatus,
    StaticResult,
    Verdict,
    VerdictReport,
    worst_verdict,
)
from gate.domain.job import GateOutcome, ProgressEvent


@pytest.mark.parametrize(("verdicts", "worst"), [
    (["accept", "reject", "error"], "error"),
    (["accept", "incomplete", "reject"], "reject"),
    (["accept", "inconclusive"], "inconclusive"),
    (["accept", "accept"], "accept"),
])
def test_worst_verdict_orders_error_reject_incomplete_accept(verdicts, worst):
    assert worst_verdict(verdicts) == worst


def test_worst_verdict_is_none_without_verdicts():
    assert worst_verdict([]) is None


def test_progress_prints_one_line_per_transition_with_elapsed_time():
    stream = io.StringIO()
    progress("wmma_gemm", time.monotonic(), stream)(ProgressEvent("static", "candidate", "passed", "1 function(s)"))
    line = stream.getvalue()
    assert line.startswith("[    0.0s] wmma_gemm") and "static" in line and line.endswith("1 function(s)\n")


def test_render_shows_the_verdict_the_rule_table_and_static_figures():
    fn = FunctionResources("_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams", "sm_80", 72, 10240, 0, 0, 0,
                           {"HMMA": 16, "LDSM": 8, "IMAD": 100})
    result = JobResult("wmma_gemm", SideResults("c" * 40, static=StaticResult(StageStatus.PASSED, functions=[fn])))
    report = VerdictReport(Verdict.INCOMPLETE, "incomplete: build: not run: no CUDA device",
                           [RuleRow("max_registers", RuleOutcome.PASS, "sm_80: 72 <= 128", value=72, threshold=128),
                            RuleRow("max_latency_regression_pct", RuleOutcome.PASS, "+0.1 %", shape="m1024",
                                    dtype="bfloat16", value=10.0, unit="us")])
    text = render([GateOutcome(result, report, [("ptxas_log", "a/ptxas.log")])], sha="c" * 40, base_sha=None)
    assert "wmma_gemm: INCOMPLETE  incomplete: build: not run: no CUDA device" in text
    assert "max_registers" in text and "128" in text
    assert "max_latency_regression_pct  m1024 bfloat16  pass" in text
    assert "wmma_gemm_kernel  sm_80  72" in text and "IMAD=100 HMMA=16 LDSM=8" in text   # largest first, the whole list
    assert "artifact ptxas_log: a/ptxas.log" in text
