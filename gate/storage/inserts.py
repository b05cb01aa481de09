"""Inserts that a unique constraint may refuse, without an exception: racing requests, one row.

`INSERT ... ON CONFLICT DO NOTHING RETURNING id` on both databases. The database decides which of
two racing inserts wins, so no read-then-write window is left open: on PostgreSQL an insert that
meets a row another transaction has not yet committed waits for it and then does nothing; on SQLite
writers are serialised. The caller then reads the row that won (in READ COMMITTED, a new statement
sees it).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from gate.errors import StorageError

_INSERTS = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}


def insert_unless_taken(session: Session, model: type, values: dict[str, Any]) -> int | None:
    """Insert one `model` row (column defaults applied); its id, or None when a unique constraint
    or unique index (a partial one included) already holds a row with these values."""
    dialect = session.get_bind().dialect.name
    insert = _INSERTS.get(dialect)
    if insert is None:
        raise StorageError(f"the gate supports SQLite and PostgreSQL, not {dialect}")
    statement = insert(model).values(**values).on_conflict_do_nothing().returning(model.id)
    return session.scalar(statement)
