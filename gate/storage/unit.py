"""The one door to the database: a `Store` per process, a `UnitOfWork` per piece of work.

    with store.unit() as uow:                           # one transaction's worth of work
        detail = uow.revisions.detail(revision_id)      # named methods return read models
        uow.commit()

Each group (`uow.planning`, `uow.history`, ...) is a class in the storage module that owns those
queries; it returns plain dataclasses or values, never a row, so no caller can lazy-load or write
behind the door (docs/design.md). A unit that leaves its `with` block without `commit()` rolls back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from gate.storage.artifacts import Artifacts
from gate.storage.cancellation import Cancellation
from gate.storage.dashboard import Overview
from gate.storage.db import make_engine, make_session_factory
from gate.storage.kernel_series import KernelSeries
from gate.storage.notices import Notices
from gate.storage.outbox import Outbox
from gate.storage.planning import Planning
from gate.storage.queries import Revisions
from gate.storage.repositories import Repositories
from gate.storage.samples import Samples
from gate.storage.telemetry_counts import TelemetryCounts
from gate.storage.webhook_deliveries import WebhookDeliveries

T = TypeVar("T")


class _Group(Generic[T]):
    """`uow.<name>`: the unit's one instance of a group class."""

    def __init__(self, kind: Callable[[Session], T]):
        self.kind = kind

    def __get__(self, uow: UnitOfWork, owner: type | None = None) -> T:
        return uow.group(self.kind)


class UnitOfWork:
    """One session: the groups of named methods share it, and `commit` ends its transaction."""

    overview = _Group(Overview)               # the overview page, the banners, compared figures
    history = _Group(KernelSeries)            # a kernel's metric history (the kernel page, the JSON API)
    revisions = _Group(Revisions)             # a revision as pages and the API show it; references
    planning = _Group(Planning)               # submitting and planning a revision
    cancellation = _Group(Cancellation)
    repositories = _Group(Repositories)
    webhooks = _Group(WebhookDeliveries)      # GitHub deliveries already seen
    notices = _Group(Notices)                 # committed events, handed to notify once
    outbox = _Group(Outbox)                   # outbound messages and their sending
    artifacts = _Group(Artifacts)
    telemetry = _Group(TelemetryCounts)       # Prometheus counts
    samples = _Group(Samples)                 # synthetic sample data; what `gate demo` reads back

    def __init__(self, session: Session):
        self._session = session
        self._groups: dict[Callable[[Session], object], object] = {}

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

    def ping(self) -> None:
        """Ask the database for nothing; raises when it does not answer."""
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()
