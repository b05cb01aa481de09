"""The revision page's Nsight Compute chart says why it has no baseline bars, and its file list
names each file once (issue 13)."""

from __future__ import annotations

from datetime import datetime

import pytest
from jinja2 import UndefinedError

from gate.api.page_views import baseline_profile_note, listed_files
from gate.api.pages import templates
from gate.domain.results import KernelMetrics, ProfileResult, StageStatus
from gate.domain.verdict import RuleOutcome, RuleRow
from gate.figures.revision import ncu_figure
from gate.read_models.revision import ArtifactDetail, JobDetail, RevisionDetail, StageDetail, VerdictDetail

AT = datetime(2025, 1, 1)


def _job(rules: list[str], stages: list[StageDetail] = ()) -> JobDetail:
    rows = [RuleRow(r, RuleOutcome.PASS, "") for r in rules]
    verdict = VerdictDetail("accept", "accept", "NVIDIA H200", rows, None, AT)
    return JobDetail(1, "k", "any", "done", 1, "w", None, None, AT, AT, AT, verdict, list(stages))


def _rev(base: str | None = "b" * 40) -> RevisionDetail:
    return RevisionDetail(1, "r", "u", "c" * 40, "main", base, base, None, None, None, AT, "done", "api",
                          None, None, None, "accept")


def _launch(shape: str, tensor_pipe_pct: float) -> KernelMetrics:
    return KernelMetrics("k", shape=shape, tensor_pipe_pct=tensor_pipe_pct)


def test_the_note_names_the_reason_the_baseline_was_not_profiled():
    # the baseline is profiled whenever it built (the source-line diff reads it), whatever the rules
    built = StageDetail("baseline", "build", "passed", "", 1.0, {})
    assert "was not profiled in this job" in baseline_profile_note(_job(["min_tensor_pipe_pct"], [built]), _rev())
    assert "no baseline" in baseline_profile_note(_job([]), _rev(base=None))
    failed = StageDetail("baseline", "profile", "failed", "ncu: ERR_NVGPUCTRPERM", 1.0,
                         ProfileResult(StageStatus.FAILED, "ncu: ERR_NVGPUCTRPERM"))
    assert baseline_profile_note(_job(["max_tensor_pipe_drop_pct"], [failed]), _rev()) == \
        "The baseline's profile failed: ncu: ERR_NVGPUCTRPERM."
    unbuilt = StageDetail("baseline", "build", "failed", "nvcc exited 1", 1.0, None)
    assert "nvcc exited 1" in baseline_profile_note(_job(["max_tensor_pipe_drop_pct"], [unbuilt]), _rev())


def test_baseline_bars_are_drawn_and_named_when_the_baseline_was_profiled():
    fig = ncu_figure([_launch("s1", 48.0), _launch("s2", 40.0)], [_launch("s1", 34.0)],
                     "candidate cccccccc", "baseline bbbbbbbb")
    baseline, candidate = fig["data"]
    assert (baseline["name"], candidate["name"]) == ("baseline bbbbbbbb", "candidate cccccccc")
    assert baseline["x"] == candidate["x"] == [["s1", "s2"], ["tensor pipe", "tensor pipe"]]
    assert baseline["y"] == [34.0, None] and candidate["y"] == [48.0, 40.0]
    assert fig["layout"]["title"]["text"] == "Nsight Compute: candidate beside baseline"
    alone = ncu_figure([_launch("s1", 48.0)], [], "candidate cccccccc")
    assert [t["name"] for t in alone["data"]] == ["candidate cccccccc"]
    assert "baseline not profiled" in alone["layout"]["title"]["text"]


def test_the_child_result_is_not_listed_beside_the_stored_result():
    files = [ArtifactDetail(1, "result", "jobs/1/result.json", 10), ArtifactDetail(2, "result_json", "a/result.json", 9),
             ArtifactDetail(3, "build_log", "a/build.log", 5), ArtifactDetail(4, "ncu_report", "a/p.ncu-rep", 5)]
    assert [(a.kind, label) for a, label in listed_files(files)] == [
        ("result", "result and verdict (JSON)"), ("build_log", "build log")]
    assert [a.kind for a, _ in listed_files(files[1:3])] == ["result_json", "build_log"]


def test_a_page_reading_a_field_its_read_model_lacks_fails_instead_of_showing_an_empty_cell():
    row = RuleRow("max_registers", RuleOutcome.FAIL, "200 > 128", value=200, threshold=128, unit="")
    assert templates.env.from_string("{{ r.rule }} {{ r.outcome }}").render(r=row) == "max_registers fail"
    with pytest.raises(UndefinedError):                      # e.g. `threshold` renamed to `limit`
        templates.env.from_string("{{ r.limit }}").render(r=row)
    with pytest.raises(UndefinedError):                      # and through the `attr` filter of the ncu table
        templates.env.from_string("{{ k | attr('tensor_pipe') }}").render(k=_launch("s1", 48.0))
