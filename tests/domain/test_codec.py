import pytest

from gate.domain import (
    FunctionResources,
    JobResult,
    Shape,
    SideResults,
    StageStatus,
    StaticResult,
    Verdict,
)
from gate.domain.codec import from_json, to_json


def test_job_result_round_trips_through_json():
    result = JobResult(
        kernel="k",
        candidate=SideResults(
            sha="abc",
            static=StaticResult(
                status=StageStatus.PASSED,
                functions=[FunctionResources("f", "sm_90", 32, 0, 0, 0, 0, {"HMMA": 4})],
            ),
        ),
    )
    assert from_json(JobResult, to_json(result)) == result


def test_from_json_names_the_field_that_does_not_fit():
    with pytest.raises(ValueError, match=r"JobResult\.candidate\.sha"):
        from_json(JobResult, {"kernel": "k", "candidate": {"sha": 3}})


def test_shape_label_lists_sizes_then_flags():
    assert Shape({"b": 1, "h": 8, "s": 512, "d": 64, "causal": True}).label == "b1_h8_s512_d64_causal"
    assert Shape({"b": 1, "causal": False}).label == "b1"


@pytest.mark.parametrize(("verdict", "code"), [("accept", 0), ("reject", 1), ("error", 2),
                                               ("incomplete", 3), ("inconclusive", 3)])
def test_verdict_exit_codes_follow_the_design(verdict, code):
    assert Verdict(verdict).exit_code == code


def test_a_launch_stored_without_its_mangled_name_reads_with_an_empty_one():
    from gate.domain import KernelMetrics

    launch = KernelMetrics("k", demangled="void k<(int)4>(float *)", mangled="_Z1kILi4EEvPf")
    assert from_json(KernelMetrics, to_json(launch)) == launch
    assert from_json(KernelMetrics, {"kernel": "k", "demangled": "void k<(int)4>(float *)"}).mangled == ""
