"""The history's side of reuse on SQLite and PostgreSQL: which job may stand for a new one, which
revisions reused, and migration 0006 up and down."""

from __future__ import annotations

from datetime import timedelta

from service_fakes import FakeOutcome, job_result
from sqlalchemy import inspect, update

from gate.domain import Verdict, VerdictReport
from gate.domain.clock import utcnow
from gate.domain.reuse import Provenance
from gate.storage import claims
from gate.storage.db import make_engine
from gate.storage.models import Job, Repository, Revision
from gate.storage.outcomes import store_outcome
from gate.storage.reuse import find_measured, reused_revisions

KEY = "f" * 64


def _job(session_factory, tmp_path, sha: str, verdict: Verdict, key: str = KEY,
         reused_from: Provenance | None = None, repo: str = "octo/flash") -> int:
    with session_factory() as s:
        repository = s.query(Repository).filter_by(name=repo).one_or_none() or Repository(name=repo, url=f"/{repo}")
        job = Job(revision=Revision(repository=repository, sha=sha), kernel="k0")
        s.add(job)
        s.commit()
        job_id = job.id
        attempt = claims.claim_job(s, job_id, worker="w")
        outcome = FakeOutcome(job_result("k0", sha), VerdictReport(verdict, "why"), reuse_key=key,
                              reused_from=reused_from)
        assert store_outcome(s, job_id, attempt, outcome, tmp_path)
    return job_id


def _find(session_factory, tmp_path, key: str = KEY, max_age_h: float = 24.0, repo: str = "octo/flash"):
    with session_factory() as s:
        repository_id = s.query(Repository).filter_by(name=repo).one().id
        return find_measured(s, tmp_path, repository_id=repository_id, kernel="k0", reuse_key=key,
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
        assert reused_revisions(s, "k0", gpu_kind) == {rev_id: f"reused from {'a' * 12} job {origin}, "
                                                               f"{at[:16].replace('T', ' ')} UTC"}


def test_0006_goes_down_and_up_again(database_url):
    from alembic import command

    from gate.storage.schema import alembic_config, migrating

    engine = make_engine(database_url)
    cfg = alembic_config(database_url)

    def migrate(step, target):
        with engine.connect() as conn, migrating(conn), conn.begin():
            cfg.attributes["connection"] = conn
            step(cfg, target)

    def columns(table):
        return {c["name"] for c in inspect(engine).get_columns(table)}

    migrate(command.downgrade, "0005")
    assert not {"reuse_key", "reused_from_job_id"} & columns("jobs") and "remeasure" not in columns("revisions")
    migrate(command.upgrade, "head")
    assert {"reuse_key", "reused_from_job_id"} <= columns("jobs") and "remeasure" in columns("revisions")
    engine.dispose()
