"""The one door to the database: a `Store` per process, a `UnitOfWork` per piece of work.

    store = Store.from_url(settings.database_url)       # once, at start (engine and sessions)
    with store.unit() as uow:                           # one transaction's worth of work
        order = uow.jobs.order(job_id)                  # named methods return read models
        uow.commit()

Nothing outside `gate.storage` imports SQLAlchemy or the ORM models (an import-linter contract):
the api, the services and the executors ask a unit of work, whose attributes group the named
methods by area (`uow.jobs`, `uow.pages`, ...). Each group is a small class in the storage module
that owns those queries, made with the unit's session; what it returns is a plain dataclass (a read
model), never a row, so that no caller can lazy-load or write behind the door.

A unit that leaves its `with` block without `commit()` rolls back what it wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from gate.storage.db import make_engine, make_session_factory

T = TypeVar("T")


class UnitOfWork:
    """One session: the groups of named methods share it, and `commit` ends its transaction."""

    def __init__(self, session: Session):
        self._session = session
        self._groups: dict[type, object] = {}

    def group(self, kind: Callable[[Session], T]) -> T:
        """The unit's instance of a group class (made once per unit, with its session)."""
        if kind not in self._groups:
            self._groups[kind] = kind(self._session)
        return self._groups[kind]  # type: ignore[return-value]

    def commit(self) -> None:
        self._session.commit()

    def rollback(self) -> None:
        self._session.rollback()

    def __enter__(self) -> UnitOfWork:
        return self

    def __exit__(self, *exc: object) -> None:
        self._session.close()      # uncommitted writes roll back with the close


class Store:
    """The database of this process: its engine and the sessions units are made with."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._sessions: sessionmaker[Session] = make_session_factory(engine)

    @classmethod
    def from_url(cls, url: str) -> Store:
        return cls(make_engine(url))

    @property
    def backend(self) -> str:
        """`sqlite` or `postgresql`."""
        return self.engine.url.get_backend_name()

    def unit(self) -> UnitOfWork:
        return UnitOfWork(self._sessions())

    def dispose(self) -> None:
        self.engine.dispose()
