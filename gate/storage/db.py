"""Engines and sessions from a database URL: SQLite (embedded default) or PostgreSQL (psycopg 3).

SQLite is opened in WAL mode so the API can read while the executor writes, with a busy timeout so
concurrent writers wait instead of failing, and with foreign keys enforced (SQLite's default is off).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 10_000


def normalize_url(url: str) -> str:
    """`postgresql://` and `postgres://` mean psycopg 3 here (SQLAlchemy would pick psycopg2)."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def make_engine(url: str) -> Engine:
    """An engine for `url`; a SQLite file's folder is created on first use."""
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() != "sqlite":
        return create_engine(parsed, pool_pre_ping=True)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        parsed,
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
    )
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001 (DBAPI types)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded attributes after commit (rows are handed to the API and notifiers)."""
    return sessionmaker(engine, expire_on_commit=False)


class Queries:
    """A group of named queries over one session: what `uow.<group>` is (`gate.storage.unit`)."""

    def __init__(self, session: Session):
        self._session = session
