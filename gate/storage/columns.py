"""Reading many small rows fast: a statement's result as columns, fetched by the DB-API cursor.

A full kernel history is ~200,000 (revision id, value) rows. Through `Connection.execute` each
becomes a `Row` and then passes a generator into `np.fromiter`: about half of the read, plus the
garbage collections that 200,000 new objects set off. The driver's own `fetchall` hands back plain
tuples, and `zip(*rows)` turns them into columns in C. Statements are compiled once per dialect;
they must use named `bindparam`s only (no expanding IN, no literal-execute limits), and columns
whose type needs a result processor (dates, JSON) are read the ordinary way.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from sqlalchemy import Connection, Dialect
from sqlalchemy.sql import Select

_compiled: dict[tuple[Select, str, str], tuple[str, tuple[str, ...] | None]] = {}
_lock = threading.Lock()


def fetch_columns(conn: Connection, stmt: Select, params: Mapping[str, object]) -> list[tuple]:
    """The rows of `stmt` under `params`, as one tuple per selected column (empty tuples when
    there are none); run in `conn`'s transaction."""
    sql, order = _compile(stmt, conn.dialect)
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql, tuple(params[n] for n in order) if order is not None else dict(params))
        rows = cursor.fetchall()
    finally:
        cursor.close()
    return list(zip(*rows)) if rows else [() for _ in stmt.selected_columns]


def _compile(stmt: Select, dialect: Dialect) -> tuple[str, tuple[str, ...] | None]:
    """(SQL, parameter names in order for a positional paramstyle, else None)."""
    key = (stmt, dialect.name, dialect.driver)     # kept: callers pass module constants
    with _lock:
        if key not in _compiled:
            compiled = stmt.compile(dialect=dialect)
            order = tuple(compiled.positiontup) if compiled.positional else None
            _compiled[key] = (str(compiled), order)
        return _compiled[key]
