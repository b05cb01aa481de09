"""The lines under a job's reason on the revision page (issue 43): a change of flags and what the
job's checked calls would have caught, from the stored verdict and bench."""

from types import SimpleNamespace

from gate.api.page_views import job_facts
from gate.domain import RuleOutcome, RuleRow
from gate.domain.results import BenchResult, ShapeTiming, StageStatus, TimingSamples


def test_the_flag_change_and_the_checked_calls_stand_under_the_reason():
    samples = TimingSamples([1.0], 1.0, 1.0, 1.0)
    bench = BenchResult(StageStatus.PASSED, shapes=[ShapeTiming("m64", "float16", samples, timed_checked=150),
                                                    ShapeTiming("m128", "float16", samples, timed_checked=160)])
    rows = [RuleRow("static_delta", RuleOutcome.PASS, "nvcc_flags: + -Xptxas=-O0"),
            RuleRow("static_delta", RuleOutcome.PASS, "sm_90 k: registers 40->24")]
    job = SimpleNamespace(verdict=SimpleNamespace(rules=rows), bench=bench)
    facts = job_facts(job)
    assert facts[0] == "nvcc_flags: + -Xptxas=-O0" and len(facts) == 2
    assert facts[1].startswith("310 calls checked in full: a kernel wrong on 1.5 % of its calls")
    assert job_facts(SimpleNamespace(verdict=None, bench=None)) == []
