"""The sample writers store a synthetic history marked as such; the demo reads verdicts back per job."""

from random import Random

from sqlalchemy import func, select

from gate.sample import seed_judged_history
from gate.sample.judging import judge_commit
from gate.sample.kernel_model import KernelModel
from gate.sample.kernels import KERNELS
from gate.sample.seed import H100
from gate.sample.story import revision_story
from gate.storage.models import Job, JobState, Metric, Repository, Revision, VerdictRecord
from gate.storage.samples import SYNTHETIC, Samples
from gate.storage.unit import UnitOfWork


def _rows(session, model):  # noqa: ANN001
    return session.scalar(select(func.count()).select_from(model))


def test_the_seed_writes_what_its_summary_counts_all_marked_synthetic(session_factory):  # noqa: ANN001
    with session_factory() as s:
        assert not Samples(s).holds_revisions()
        summary = seed_judged_history(UnitOfWork(s), revisions=8, kernels=["flashcore_wmma"])
    with session_factory() as s:
        assert Samples(s).holds_revisions()
        assert (summary.revisions, summary.jobs) == (9, 17)     # 8 on two GPUs, one in flight
        assert _rows(s, Revision) == summary.revisions and _rows(s, Job) == summary.jobs
        assert _rows(s, Metric) == summary.metrics > 0
        assert set(s.scalars(select(Revision.source))) == {SYNTHETIC}
        assert _rows(s, VerdictRecord) == 16
        assert set(s.scalars(select(Job.state))) == {JobState.DONE, JobState.RUNNING}
        # One line of main, placed as planning would place it: first-parent depth 1, 2, ...
        places = s.execute(select(Revision.position, Revision.on_branch).order_by(Revision.id)).all()
        assert places == [(depth, True) for depth in range(1, summary.revisions + 1)]


def test_the_stored_verdicts_are_the_judged_ones_in_commit_order(session_factory):  # noqa: ANN001
    with session_factory() as s:
        seed_judged_history(UnitOfWork(s), revisions=6, kernels=["gemm_tiled"], queue=False, seed=7)
        stored = s.execute(select(VerdictRecord.verdict, VerdictRecord.reason)
                           .order_by(VerdictRecord.revision_id)).all()
    rng = Random(7)
    story = revision_story(6, rng)
    model = KernelModel("gemm_tiled", KERNELS["gemm_tiled"], rng)
    judged = [judge_commit(model, event, H100, "0" * 40) for event in story]
    assert [tuple(row) for row in stored] == [(o.verdict, o.reason) for o in judged]


def test_an_appended_revision_copies_the_newest_verdict_and_metrics(session_factory):  # noqa: ANN001
    with session_factory() as s:
        seed_judged_history(UnitOfWork(s), revisions=4, kernels=["gemm_tiled"], queue=False)
        rev_id = Samples(s).append_judged_revision("gemm_tiled")
        s.commit()
        copy, newest = s.scalars(select(VerdictRecord).order_by(VerdictRecord.revision_id.desc()).limit(2))
        assert copy.revision_id == rev_id
        assert (copy.verdict, copy.reason, copy.rules) == (newest.verdict, newest.reason, newest.rules)
        metrics = [s.scalar(select(func.count()).where(Metric.revision_id == r))
                   for r in (copy.revision_id, newest.revision_id)]
        assert metrics[0] == metrics[1] > 0


def test_job_verdicts_gives_none_for_a_job_without_a_verdict(session_factory):  # noqa: ANN001
    with session_factory() as s:
        rev = Revision(repository=Repository(name="r", url="/r"), sha="a" * 40, error="no gate.toml at a")
        s.add_all([Job(revision=rev, kernel="k1"), Job(revision=rev, kernel="k2")])
        s.flush()
        s.add(VerdictRecord(job_id=rev.jobs[1].id, revision_id=rev.id, kernel="k2", gpu_kind="any",
                            verdict="reject", reason="why", rules=[]))
        s.commit()
        assert Samples(s).job_verdicts(rev.id) == [("k1", None, None), ("k2", "reject", "why")]
        assert Samples(s).revision_error(rev.id) == "no gate.toml at a"
