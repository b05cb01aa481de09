"""The revision page shows what the GPU watch saw and says when the baseline revision's own job ran
in another environment (issue 14), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from gate.storage.db import make_engine, make_session_factory
from gate.storage.models import Repository, Revision, RevisionStatus
from gate.storage.samples import JudgedJob, Samples

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WATCH = {"available": True, "samples": 40, "interval_ms": 100.0, "sm_clock_mhz_min": 1965,
         "sm_clock_mhz_max": 1980, "sm_clock_mhz_median": 1980.0, "mem_clock_mhz_min": 3201,
         "mem_clock_mhz_max": 3201, "temperature_c_max": 51, "power_w_max": 402.5,
         "clock_events": ["software power cap"], "other_processes": ["pid 4242: 3072 MiB"],
         "problems": ["the GPU was shared while timing (pid 4242: 3072 MiB)"]}


def _seed(database_url, base_driver: str) -> int:
    engine = make_engine(database_url)
    with make_session_factory(engine)() as s:
        repo = Repository(name="flash", url="/flash")
        base = Revision(repository=repo, sha="b" * 40, status=RevisionStatus.DONE)
        cand = Revision(repository=repo, sha="c" * 40, base_sha="b" * 40, status=RevisionStatus.DONE)
        s.add_all([base, cand])
        s.flush()
        for rev, driver, watch in ((base, base_driver, {"available": False, "reason": "no NVML: x"}),
                                   (cand, "570.86", WATCH)):
            bench = {"status": "passed", "shapes": [], "gpu_watch": watch, "clock_policy": "observe",
                     "clock_note": "clocks left alone and observed"}
            Samples(s).add_judged_jobs([JudgedJob(
                revision_id=rev.id, kernel="k", gpu_kind="NVIDIA H200", worker="w", queued_at=NOW, started_at=NOW,
                finished_at=NOW, verdict="inconclusive", reason="r", rules=[],
                fingerprint={"gpu_name": "NVIDIA H200", "driver": driver},
                stages=[("joint", "bench", "passed", "", bench)])])
        s.commit()
        cand_id = cand.id
    engine.dispose()
    return cand_id


def test_the_page_shows_the_watch_and_a_baseline_from_another_environment(make_client, database_url):
    rev_id = _seed(database_url, base_driver="550.54")
    html = make_client(embedded_executor=False).get(f"/revisions/{rev_id}").text
    assert "GPU while timing" in html
    assert "1965..1980 MHz (median 1980)" in html and "3201 MHz" in html
    assert "software power cap" in html and "pid 4242: 3072 MiB" in html
    assert "51 °C" in html and "402.5 W" in html
    assert "Latency not trusted: the GPU was shared while timing" in html
    assert "Environment: NVIDIA H200 | driver 570.86 | clocks observe." in html
    assert "different environment (NVIDIA H200 | driver 550.54 | clocks observe)" in html


def test_a_baseline_from_the_same_environment_is_not_flagged(make_client, database_url):
    rev_id = _seed(database_url, base_driver="570.86")
    html = make_client(embedded_executor=False).get(f"/revisions/{rev_id}").text
    assert "GPU while timing" in html and "different environment" not in html
