"""Alembic environment. Run through `gate.storage.schema.upgrade`, which hands over a connection."""

from __future__ import annotations

from alembic import context

from gate.storage.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        from gate.storage.db import make_engine

        with make_engine(config.get_main_option("sqlalchemy.url")).connect() as conn:
            _run(conn)
        return
    _run(connection)


def _run(connection) -> None:  # noqa: ANN001
    # Batch mode: SQLite cannot ALTER most things in place; Alembic copies the table instead.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run `gate migrate`")
run_migrations_online()
