"""Verdict reports shaped like `decide()` output, one per verdict, for message and listener tests."""

from gate.domain.verdict import RuleOutcome, RuleRow, Verdict, VerdictReport

SHAPE = "b4_h16_s4096_d64_causal"

_PASSING = [
    RuleRow("correctness", RuleOutcome.PASS, "12/12 cases within tolerance"),
    RuleRow("max_registers", RuleOutcome.PASS, "96 registers", value=96, threshold=128, unit="regs"),
    RuleRow("max_spill_bytes", RuleOutcome.PASS, "no spills", value=0, threshold=0, unit="B"),
    RuleRow("require_sass", RuleOutcome.PASS, "HMMA present", value="HMMA", threshold="HMMA"),
]


def _latency(outcome: RuleOutcome, ratio_pct: float, reason: str) -> RuleRow:
    """The latency row; `decide` marks it decisive for these reports (accept names its latency)."""
    return RuleRow("max_latency_regression_pct", outcome, reason, shape=SHAPE, value=ratio_pct,
                   threshold=3.0, baseline=812.4, delta=ratio_pct, unit="%", decisive=True)


REPORTS = {
    "accept": VerdictReport(Verdict.ACCEPT, "all 6 rules pass", _PASSING + [
        _latency(RuleOutcome.PASS, -1.82, "1.8% faster than the baseline (p=0.003)"),
        RuleRow("min_tensor_pipe_pct", RuleOutcome.PASS, "tensor pipe 61.2% of peak", shape=SHAPE,
                value=61.2, threshold=40.0, baseline=60.8, delta=0.4, unit="%"),
    ]),
    "reject_bank_conflicts": VerdictReport(
        Verdict.REJECT, "max_bank_conflict_pct: 12.5% of shared loads conflict (limit 5%)", _PASSING + [
            RuleRow("max_bank_conflict_pct", RuleOutcome.FAIL, "shared loads conflict: pad the K tile",
                    shape=SHAPE, value=12.5, threshold=5.0, baseline=0.4, delta=12.1, unit="%", decisive=True),
        ]),
    "reject_latency": VerdictReport(
        Verdict.REJECT, "7.9% slower than the baseline (p<0.001)", _PASSING + [
            _latency(RuleOutcome.FAIL, 7.94, "7.9% slower | median 876.9 us vs 812.4 us (p<0.001)"),
        ]),
    "inconclusive": VerdictReport(
        Verdict.INCONCLUSIVE, "the latency interval straddles +3% after 3 attempts", _PASSING + [
            _latency(RuleOutcome.INCONCLUSIVE, 2.9, "95% interval [+1.1%, +4.6%] straddles the limit"),
        ]),
    "incomplete": VerdictReport(
        Verdict.INCOMPLETE, "correctness, bench and profile not run: no CUDA device", [
            RuleRow("correctness", RuleOutcome.NOT_RUN, "not run: no CUDA device", decisive=True),
            RuleRow("max_registers", RuleOutcome.PASS, "96 registers", value=96, threshold=128, unit="regs"),
        ]),
    "error": VerdictReport(Verdict.ERROR, "the GPU child exited with signal 9 (out of memory?)"),
}
