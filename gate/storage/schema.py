"""Bring a database to the newest schema with the Alembic migrations shipped inside the package."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

from gate.errors import StorageError

# A package resource, not a path beside this file: alembic opens it with importlib.resources, so the
# migrations are found wherever the package is installed (a wheel, an editable checkout, a zip).
MIGRATIONS = "gate.storage:migrations"
# Any constant works; it only has to be the same in every process that migrates this database.
_PG_MIGRATION_LOCK = 0x6A7E


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(engine: Engine) -> None:
    """Apply every migration not yet applied. Safe when a server and workers start together."""
    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection, migrating(connection):
            with connection.begin():
                if connection.dialect.name == "postgresql":
                    # Transaction-scoped advisory lock: two processes migrating at once queue up.
                    connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
                cfg.attributes["connection"] = connection
                command.upgrade(cfg, "head")
    except Exception as exc:  # the database refused or is unreachable
        if isinstance(exc, StorageError):
            raise
        raise StorageError(f"cannot migrate {engine.url.render_as_string()}: {exc}") from exc


@contextmanager
def migrating(connection: Connection) -> Iterator[None]:
    """Around migrations run on `connection` (outside its transaction): on SQLite, foreign keys off.
    Batch mode copies a table and drops the old one, which the foreign keys of other tables refuse;
    SQLite can switch them off only outside a transaction (Alembic's advice). They are checked, and
    on again, once the migrations are committed."""
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        _sqlite_foreign_keys(connection, on=False)
    try:
        yield
    finally:
        if sqlite:
            _sqlite_foreign_keys(connection, on=True)


def _sqlite_foreign_keys(connection: Connection, *, on: bool) -> None:
    connection.exec_driver_sql(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all() if on else []
    connection.commit()
    if broken:
        raise StorageError(f"the migrated database has rows whose foreign keys point nowhere: {broken[:5]}")


def current_revision(engine: Engine) -> str | None:
    """The Alembic revision the database is at (None: never migrated)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()
