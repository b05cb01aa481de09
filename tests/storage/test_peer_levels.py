"""Peers are data: whatever a workload timed beside the kernel is drawn as a reference level, under
the name the workload gave it, on SQLite and PostgreSQL (issue 23)."""

from __future__ import annotations

from gate.storage.kernel_series import KernelSeries
from gate.storage.models import Job, Metric, Repository, Revision, VerdictRecord

KERNEL, GPU, SHAPE = "k", "NVIDIA H200", "n4096"


def _store(session_factory, series_values: dict[str, float]) -> None:  # noqa: ANN001
    with session_factory() as s:
        rev = Revision(repository=Repository(name="r", url="/r"), sha="a" * 40, message="c")
        s.add(rev)
        s.flush()
        job = Job(revision_id=rev.id, kernel=KERNEL, gpu_kind=GPU, state="done")
        s.add(job)
        s.flush()
        for series, value in series_values.items():
            s.add(Metric(revision_id=rev.id, job_id=job.id, kernel=KERNEL, gpu_kind=GPU, shape=SHAPE,
                         name="latency_median_us", series=series, value=value, unit="us"))
        s.add(VerdictRecord(job_id=job.id, revision_id=rev.id, kernel=KERNEL, gpu_kind=GPU,
                            verdict="accept", reason="r", rules=[]))
        s.commit()


def test_a_custom_workloads_peers_are_drawn_and_the_sides_are_not(session_factory):  # noqa: ANN001
    _store(session_factory, {"candidate": 10.0, "baseline": 11.0, "torch_cumsum": 14.0, "cublas": 9.0})
    with session_factory() as s:
        levels = KernelSeries(s).peer_levels(KERNEL, GPU, "latency_median_us", [SHAPE])
    assert levels == {(SHAPE, "cublas"): 9.0, (SHAPE, "torch_cumsum"): 14.0}
