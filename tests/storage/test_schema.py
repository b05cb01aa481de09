"""The migrations build exactly the schema of models.py, on SQLite and PostgreSQL."""

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from gate.storage.db import make_engine
from gate.storage.models import Base
from gate.storage.schema import current_revision, upgrade


def test_migrated_schema_matches_the_models(database_url):
    engine = make_engine(database_url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == []


def test_upgrade_twice_is_a_no_op(database_url):
    engine = make_engine(database_url)
    upgrade(engine)
    assert current_revision(engine) == "0002"   # head: 0002 adds the history indexes
    engine.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'sub' / 'g.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() >= 1000
    engine.dispose()
