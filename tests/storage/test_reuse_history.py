"""The history's side of reuse on SQLite and PostgreSQL: which job may stand for a new one, which
revisions reused, whose candidate profile may stand for a later baseline, and migrations 0006 and
0007 up and down."""

from __future__ import annotations

from datetime import timedelta

from service_fakes import FakeOutcome, job_result
from sqlalchemy import inspect, update

from gate.domain import StageStatus, Verdict, VerdictReport
from gate.domain.clock import utcnow
from gate.domain.reuse import Provenance
from gate.storage import claims
from gate.storage.db import make_engine
from gate.storage.models import Job, Repository, Revision
from gate.storage.outcomes import store_outcome
from gate.storage.reuse import find_measured, find_profile
from gate.storage.series_cache import SeriesCache
from gate.storage.series_reuse import read_reused

KEY = "f" * 64


def _job(session_factory, tmp_path, sha: str, verdict: Verdict, key: str = KEY,
         reused_from: Provenance | None = None, repo: str = "octo/flash", candidate_key: str = "",
         profile: StageStatus = StageStatus.PASSED) -> int:
    with session_factory() as s:
        repository = s.query(Repository).filter_by(name=repo).one_or_none() or Repository(name=repo, url=f"/{repo}")
        job = Job(revision=Revision(repository=repository, sha=sha), kernel="k0")
        s.add(job)
        s.commit()
        job_id = job.id
        attempt = claims.Claims(s).claim(job_id, worker="w")
        result = job_result("k0", sha)
        result.candidate.profile.status = profile
        outcome = FakeOutcome(result, VerdictReport(verdict, "why"), reuse_key=key, candidate_key=candidate_key,
                              reused_from=reused_from)
        assert store_outcome(s, job_id, attempt, outcome, tmp_path)
    return job_id


def _find(session_factory, tmp_path, key: str = KEY, max_age_h: float = 24.0, repo: str = "octo/flash"):
    with session_factory() as s:
        repository_id = s.query(Repository).filter_by(name=repo).one().id
        return find_measured(s, tmp_path, repository_id=repository_id, kernel="k0", key=key,
                             max_age_h=max_age_h)


def test_the_newest_judged_measuring_job_is_found_with_its_result(session_factory, tmp_path):
    _job(session_factory, tmp_path, "a" * 40, Verdict.ACCEPT)
    newest = _job(session_factory, tmp_path, "b" * 40, Verdict.REJECT)
    found = _find(session_factory, tmp_path)
    assert found.source.job_id == newest and found.source.sha == "b" * 40
    assert found.result.kernel == "k0" and found.result.bench.shapes[0].candidate.median_us == 50.0


def test_unjudged_reusing_old_foreign_or_other_key_jobs_are_not_offered(session_factory, tmp_path):
    _job(session_factory, tmp_path, "a" * 40, Verdict.INCONCLUSIVE)
    _job(session_factory, tmp_path, "b" * 40, Verdict.INCOMPLETE)
    _job(session_factory, tmp_path, "c" * 40, Verdict.ACCEPT, reused_from=Provenance(1, "a" * 40, "2026-01-01"))
    _job(session_factory, tmp_path, "d" * 40, Verdict.ACCEPT, repo="other/repo")
    assert _find(session_factory, tmp_path) is None
    measured = _job(session_factory, tmp_path, "e" * 40, Verdict.ACCEPT)
    assert _find(session_factory, tmp_path, key="0" * 64) is None
    assert _find(session_factory, tmp_path, max_age_h=0) is None
    with session_factory() as s:
        s.execute(update(Job).where(Job.id == measured).values(finished_at=utcnow() - timedelta(hours=25)))
        s.commit()
    assert _find(session_factory, tmp_path) is None              # older than the 24 h asked for
    assert _find(session_factory, tmp_path, max_age_h=26).source.job_id == measured


def _find_profile(session_factory, tmp_path, key: str = KEY, max_age_h: float = 24.0):
    with session_factory() as s:
        repository_id = s.query(Repository).filter_by(name="octo/flash").one().id
        return find_profile(s, tmp_path, repository_id=repository_id, kernel="k0", key=key, max_age_h=max_age_h)


def test_the_newest_measured_candidate_profile_of_a_side_key_is_found(session_factory, tmp_path):
    _job(session_factory, tmp_path, "a" * 40, Verdict.ACCEPT, key="1" * 64, candidate_key=KEY)
    newest = _job(session_factory, tmp_path, "b" * 40, Verdict.REJECT, key="2" * 64, candidate_key=KEY)
    found = _find_profile(session_factory, tmp_path)
    assert found.source.job_id == newest and found.source.sha == "b" * 40
    assert found.profile.status is StageStatus.PASSED and found.profile.kernels[0].tensor_pipe_pct == 60.0
    assert found.line == f"baseline profile reused from {'b' * 12} job {newest}, {found.source.measured_at[:10]} " \
                         f"{found.source.measured_at[11:16]} UTC"
    assert _find_profile(session_factory, tmp_path, key="0" * 64) is None      # another side's inputs
    assert _find_profile(session_factory, tmp_path, max_age_h=0) is None


def test_a_failed_unjudged_reusing_or_old_candidate_profile_is_not_offered(session_factory, tmp_path):
    _job(session_factory, tmp_path, "a" * 40, Verdict.INCONCLUSIVE, candidate_key=KEY)
    _job(session_factory, tmp_path, "c" * 40, Verdict.ACCEPT, candidate_key=KEY,
         reused_from=Provenance(1, "a" * 40, "2026-01-01"))    # its profile is another job's: name that one
    assert _find_profile(session_factory, tmp_path) is None
    measured = _job(session_factory, tmp_path, "e" * 40, Verdict.ACCEPT, candidate_key=KEY)
    assert _find_profile(session_factory, tmp_path).source.job_id == measured
    with session_factory() as s:
        s.execute(update(Job).where(Job.id == measured).values(finished_at=utcnow() - timedelta(hours=25)))
        s.commit()
    assert _find_profile(session_factory, tmp_path) is None              # older than the 24 h asked for
    assert _find_profile(session_factory, tmp_path, max_age_h=26).source.job_id == measured
    _job(session_factory, tmp_path, "d" * 40, Verdict.REJECT, candidate_key=KEY, profile=StageStatus.ERROR)
    assert _find_profile(session_factory, tmp_path, max_age_h=26) is None   # the newest could not profile: again


def test_a_missing_result_file_means_measure_again(session_factory, tmp_path):
    _job(session_factory, tmp_path, "a" * 40, Verdict.ACCEPT)
    for path in (tmp_path / "artifacts").rglob("result.json"):
        path.unlink()
    assert _find(session_factory, tmp_path) is None


def test_revisions_that_reused_are_listed_with_their_origin(session_factory, tmp_path):
    origin = _job(session_factory, tmp_path, "a" * 40, Verdict.ACCEPT)
    with session_factory() as s:
        at = s.get(Job, origin).finished_at.isoformat()
    reuser = _job(session_factory, tmp_path, "b" * 40, Verdict.ACCEPT, reused_from=Provenance(origin, "a" * 40, at))
    with session_factory() as s:
        rev_id = s.get(Job, reuser).revision_id
        gpu_kind = s.get(Job, reuser).verdict.gpu_kind
        line = f"reused from {'a' * 12} job {origin}, {at[:16].replace('T', ' ')} UTC"
        assert read_reused(s.connection(), "k0", gpu_kind, 0) == {rev_id: line}
        assert read_reused(s.connection(), "k0", gpu_kind, rev_id) == {}      # only verdicts above `after`
        assert SeriesCache().history(s.connection(), "k0", gpu_kind, []).reused == {rev_id: line}


def _migrator(database_url):
    """The engine and a `migrate(step, target)` that runs an alembic command on it."""
    from gate.storage.schema import alembic_config, migrating

    engine = make_engine(database_url)
    cfg = alembic_config(database_url)

    def migrate(step, target):
        with engine.connect() as conn, migrating(conn), conn.begin():
            cfg.attributes["connection"] = conn
            step(cfg, target)

    return engine, migrate


def test_0006_goes_down_and_up_again(database_url):
    from alembic import command

    engine, migrate = _migrator(database_url)

    def columns(table):
        return {c["name"] for c in inspect(engine).get_columns(table)}

    migrate(command.downgrade, "0005")
    assert not {"reuse_key", "reused_from_job_id"} & columns("jobs") and "remeasure" not in columns("revisions")
    migrate(command.upgrade, "head")
    assert {"reuse_key", "reused_from_job_id"} <= columns("jobs") and "remeasure" in columns("revisions")
    engine.dispose()


def test_0007_goes_down_and_up_again(database_url):
    from alembic import command

    engine, migrate = _migrator(database_url)

    def jobs():
        return ({c["name"] for c in inspect(engine).get_columns("jobs")},
                {i["name"] for i in inspect(engine).get_indexes("jobs")})

    migrate(command.downgrade, "0006")
    columns, indexes = jobs()
    assert "candidate_key" not in columns and "ix_jobs_candidate_key" not in indexes and "reuse_key" in columns
    migrate(command.upgrade, "head")
    columns, indexes = jobs()
    assert "candidate_key" in columns and "ix_jobs_candidate_key" in indexes
    engine.dispose()
