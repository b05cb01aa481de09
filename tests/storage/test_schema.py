"""The migrations build exactly the schema of models.py, on SQLite and PostgreSQL."""

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from gate.storage.db import make_engine
from gate.storage.models import Base
from gate.storage.schema import current_revision, upgrade

HEAD = "0011"   # ... 0009 job GPU, 0010 commit position, 0011 a revision's figures by its id


def test_migrated_schema_matches_the_models(database_url):
    engine = make_engine(database_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == []


def test_upgrade_twice_is_a_no_op(database_url):
    engine = make_engine(database_url)
    upgrade(engine)
    assert current_revision(engine) == HEAD
    engine.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'sub' / 'g.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() >= 1000
    engine.dispose()


def test_0003_gives_figures_stored_before_an_unknown_environment_and_goes_back(database_url):
    """A database at 0002 with a stored figure: after 0003 the figure reads environment "" (unknown),
    and the downgrade drops the column again, on SQLite and PostgreSQL."""
    from alembic import command

    from gate.storage.schema import alembic_config, migrating

    engine = make_engine(database_url)
    cfg = alembic_config(database_url)

    def migrate(step, target):
        with engine.connect() as conn, migrating(conn), conn.begin():
            cfg.attributes["connection"] = conn
            step(cfg, target)

    migrate(command.downgrade, "0002")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO repositories (id, name, url, default_branch, created_at) "
                          "VALUES (1, 'r', 'r', 'main', CURRENT_TIMESTAMP)"))
        conn.execute(text("INSERT INTO revisions (id, repository_id, sha, submitted_at, status, source) "
                          "VALUES (1, 1, 'abc', CURRENT_TIMESTAMP, 'done', 'api')"))
        conn.execute(text("INSERT INTO jobs (id, revision_id, kernel, gpu_kind, state, attempts, queued_at) "
                          "VALUES (1, 1, 'k', 'H200', 'done', 1, CURRENT_TIMESTAMP)"))
        conn.execute(text("INSERT INTO metrics (revision_id, job_id, kernel, gpu_kind, shape, name, series, "
                          "value, unit, direction) VALUES (1, 1, 'k', 'H200', 's', 'latency_median_us', "
                          "'candidate', 457.0, 'us', 'lower')"))
    migrate(command.upgrade, "0003")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value, environment FROM metrics")).one() == (457.0, "")
    migrate(command.downgrade, "0002")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT value FROM metrics")).scalar() == 457.0
        columns = conn.execute(text("SELECT * FROM metrics")).keys()
    assert "environment" not in columns
    migrate(command.upgrade, "head")
    engine.dispose()



def test_migration_0004_merges_repository_rows_that_races_duplicated(database_url):
    """Rows stored twice for one URL before 0004 (issue 12's race) become one, keeping every revision."""
    from alembic import command

    from gate.storage.schema import alembic_config

    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    for table in ("notices", "notifications", "webhook_deliveries", "artifacts", "verdicts", "metrics", "stage_results",
                  "job_events", "jobs", "revisions", "repositories"):
        with engine.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
    cfg = alembic_config(database_url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0002")
    with engine.begin() as conn:
        for repo_id, name in ((1, "flash"), (2, "flash-1a2b3c4d"), (3, "other")):
            url = "/src/other" if name == "other" else "/src/flash"
            conn.execute(text("INSERT INTO repositories (id, name, url, default_branch, created_at) "
                              "VALUES (:i, :n, :u, 'main', CURRENT_TIMESTAMP)"), {"i": repo_id, "n": name, "u": url})
            conn.execute(text("INSERT INTO revisions (repository_id, sha, submitted_at, status, source) "
                              "VALUES (:i, 'abc', CURRENT_TIMESTAMP, 'done', 'api')"), {"i": repo_id})
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id, name FROM repositories ORDER BY id")).all() == [(1, "flash"), (3, "other")]
        assert conn.execute(text("SELECT repository_id FROM revisions ORDER BY id")).scalars().all() == [1, 1, 3]
    engine.dispose()


def test_migration_0005_adds_the_notices_and_takes_them_away(database_url):
    """0005 creates the events notify must hear of; its downgrade drops them and nothing else."""
    from alembic import command

    from gate.storage.schema import alembic_config, migrating

    engine = make_engine(database_url)
    cfg = alembic_config(database_url)

    def migrate(step, target):
        with engine.connect() as conn, migrating(conn), conn.begin():
            cfg.attributes["connection"] = conn
            step(cfg, target)

    def tables() -> set[str]:
        from sqlalchemy import inspect

        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())

    migrate(command.downgrade, "0004")
    assert "notices" not in tables() and "notifications" in tables()
    migrate(command.upgrade, "0005")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO notices (kind, body, created_at) VALUES ('verdict', '{}', CURRENT_TIMESTAMP)"))
    with engine.connect() as conn:
        assert conn.execute(text("SELECT kind FROM notices")).one() == ("verdict",)
    migrate(command.downgrade, "0004")
    assert "notices" not in tables()
    migrate(command.upgrade, "head")
    assert current_revision(engine) == HEAD
    engine.dispose()
