"""The GPU-watch panel of the revision page (gate.figures.gpu_watch), from stored JSON decoded once."""

from gate.domain.codec import from_json
from gate.domain.results import BenchResult
from gate.figures.gpu_watch import gpu_watch_panel


def _bench(stored: dict) -> BenchResult:
    """The bench stage's stored JSON as the read model decodes it (`gate.storage.queries`)."""
    return from_json(BenchResult, stored)

ENV = "NVIDIA H200 | driver 570.86 | clocks lock"


def test_no_bench_no_panel():
    assert gpu_watch_panel(None, ENV, None) is None


def test_a_watch_that_was_not_available_says_why_and_the_policy_applied():
    panel = gpu_watch_panel(_bench({"status": "passed",
                                    "gpu_watch": {"available": False, "reason": "no NVML: libnvidia-ml.so"},
                                    "clock_policy": "observe",
                                    "clock_note": "clock lock asked for but not applied (NVMLError: No permission)"}),
                            ENV, None)
    rows = dict(panel.rows)
    assert rows["clock policy"].startswith("observe (clock lock asked for but not applied")
    assert rows["GPU watch"] == "not available: no NVML: libnvidia-ml.so"
    assert panel.notes == [f"Environment: {ENV}."]


def test_jobs_stored_before_the_watch_read_as_unrecorded_and_unknown():
    panel = gpu_watch_panel(_bench({"status": "passed"}), "", "")
    assert dict(panel.rows)["GPU watch"] == "not available: not recorded with this job"
    assert panel.notes == ["Environment: unknown environment."]          # same (unknown) as the baseline
