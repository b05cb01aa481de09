"""Issue 45 item 2, per point: a verdict's marker goes only on the series a rule that failed at that
revision judges. The history read carries each point's failing rules (and the deciding row) from the
stored rule rows; the kernel page's charts read them."""

from __future__ import annotations

from gate.domain.codec import to_json
from gate.domain.verdict import RuleOutcome as O
from gate.domain.verdict import RuleRow
from gate.figures.kernel_page import kernel_charts
from gate.figures.palette import SERIES_COLOR
from gate.storage.kernel_series import KernelSeries
from gate.storage.models import Job, Metric, Repository, Revision, VerdictRecord
from gate.storage.series_cache import SeriesCache

KERNEL, GPU = "k", "NVIDIA H100"
LAT = "max_latency_regression_pct"
TRACES = [("latency_median_us", "s1", "candidate"), ("latency_median_us", "s2", "candidate"),
          ("registers", "", "sm_90")]


def _rows(latency_s1: O = O.PASS, registers: O = O.PASS) -> list[RuleRow]:
    """One revision's rule table: latency at two shapes, registers per kernel, a DRAM floor not run."""
    rows = [RuleRow(LAT, latency_s1, "lat", shape="s1", dtype="float16", value=12.0, threshold=11.0, baseline=10.0),
            RuleRow(LAT, O.PASS, "lat", shape="s2", dtype="float16", value=10.0, threshold=11.0, baseline=10.0),
            RuleRow("max_registers", registers, "sm_90 k: regs", value=140, threshold=128),
            RuleRow("min_dram_pct", O.NOT_RUN, "no profile")]
    for row in rows:
        row.decisive = row.outcome is O.FAIL and not any(r.decisive for r in rows)
    return rows


# (verdict, rule rows) of revisions 0..4: 2 rejected by latency at s1, 3 by registers.
HISTORY = [("accept", _rows()), ("accept", _rows()), ("reject", _rows(latency_s1=O.FAIL)),
           ("reject", _rows(registers=O.FAIL)), ("accept", _rows())]


def _store(session_factory, upto: int = len(HISTORY)) -> list[int]:  # noqa: ANN001
    with session_factory() as s:
        repo = s.query(Repository).first() or Repository(name="r", url="/r")
        revs = s.query(Revision).order_by(Revision.id).all()
        for i in range(len(revs), upto):
            revs.append(Revision(repository=repo, sha=f"{i:040x}", message=f"commit {i}", position=i + 1))
            s.add(revs[-1])
            s.flush()
            verdict, rows = HISTORY[i]
            job = Job(revision_id=revs[-1].id, kernel=KERNEL, gpu_kind=GPU, state="done")
            s.add(job)
            s.flush()
            for name, shape, series in TRACES:
                s.add(Metric(revision_id=revs[-1].id, job_id=job.id, kernel=KERNEL, gpu_kind=GPU, shape=shape,
                             name=name, series=series, value=10.0 + i, unit="us" if shape else "registers"))
            s.add(VerdictRecord(job_id=job.id, revision_id=revs[-1].id, kernel=KERNEL, gpu_kind=GPU,
                                verdict=verdict, reason="r", rules=to_json(rows)))
        s.commit()
        return [r.id for r in revs]


def _history(session_factory, cache: SeriesCache | None = None, max_points: int = 100):  # noqa: ANN001, ANN202
    with session_factory() as s:
        return KernelSeries(s).history(KERNEL, GPU, TRACES, max_points=max_points, cache=cache)


def _series(hist, name: str, shape: str):  # noqa: ANN001, ANN202
    return next(s for s in hist.series if s.name == name and s.shape == shape)


def test_each_point_carries_the_rules_that_failed_at_its_shape_and_the_deciding_row(session_factory):  # noqa: ANN001
    _store(session_factory)
    hist = _history(session_factory)
    s1, s2, regs = (_series(hist, *t[:2]) for t in TRACES)
    assert s1.verdicts == s2.verdicts == regs.verdicts == [v for v, _ in HISTORY]
    assert s1.failed == [(), (), (LAT,), ("max_registers",), ()]       # per-kernel rows judge every shape
    assert s2.failed == [(), (), (), ("max_registers",), ()]           # s1's latency is not s2's
    assert regs.failed == [(), (), (LAT,), ("max_registers",), ()]     # a per-arch trace: every shape's rows
    assert s1.deciding == s2.deciding == ["", "", f"{LAT} s1 float16", "max_registers", ""]
    assert "min_dram_pct" not in {r for p in regs.failed for r in p}   # not run beside a fail: not a cause


def test_rejected_by_latency_marks_the_latency_point_and_leaves_registers_plain(session_factory):  # noqa: ANN001
    _store(session_factory)
    newest = [RuleRow(LAT, O.PASS, "lat", shape="s1"), RuleRow("max_registers", O.PASS, "ok", threshold=128)]
    charts = {c.id: c.figure["data"][0] for c in kernel_charts(_history(session_factory), newest, {})}
    latency, other_shape, registers = charts["latency-s1"], charts["latency-s2"], charts["registers"]
    assert latency["marker"]["symbol"] == ["circle", "circle", "x", "circle", "circle"]
    assert latency["marker"]["line"]["color"][2] == "#cf222e"                    # ringed in reject's colour
    assert registers["marker"]["symbol"] == ["circle", "circle", "circle", "x", "circle"]
    assert registers["marker"]["line"]["color"][2] == SERIES_COLOR[0]            # point 2: a plain dot
    assert other_shape["marker"]["symbol"][2] == "circle"
    # the plain point's hover still says the verdict and what decided it
    assert list(registers["customdata"][2]) == [registers["customdata"][2][0], "reject", f" by {LAT} s1 float16"]
    assert "%{customdata[4]}%{customdata[5]}" in registers["hovertemplate"]


def test_a_bucket_carries_the_failing_rules_of_its_revisions_with_its_verdict(session_factory):  # noqa: ANN001
    _store(session_factory)
    hist = _history(session_factory, max_points=2)          # buckets of 3 line places: 0-2, 3-4
    assert hist.bucket_revisions == 3
    s1, regs = _series(hist, "latency_median_us", "s1"), _series(hist, "registers", "")
    assert s1.verdicts == ["reject", "reject"]
    assert s1.failed == [(LAT,), ("max_registers",)] and regs.failed == [(LAT,), ("max_registers",)]
    assert s1.deciding == [f"{LAT} s1 float16", "max_registers"]


def test_failing_rules_read_incrementally_land_on_their_own_rows(session_factory):  # noqa: ANN001
    _store(session_factory, upto=3)
    cache = SeriesCache()
    assert _series(_history(session_factory, cache), "registers", "").failed == [(), (), (LAT,)]
    _store(session_factory)
    regs = _series(_history(session_factory, cache), "registers", "")
    assert regs.failed == [(), (), (LAT,), ("max_registers",), ()]
    assert cache.full_reads == 1
