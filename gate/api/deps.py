"""FastAPI dependencies as `Annotated` aliases: `def route(session: SessionDep, gate: GateDep)`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gate.api.auth import require_write_token
from gate.api.context import GateContext
from gate.config import Settings
from gate.storage.series_cache import SeriesCache


def get_gate(request: Request) -> GateContext:
    return request.app.state.gate


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.gate.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.gate.session_factory() as session:
        yield session


def get_series_cache(request: Request) -> SeriesCache:
    return request.app.state.series_cache


GateDep = Annotated[GateContext, Depends(get_gate)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
SeriesCacheDep = Annotated[SeriesCache, Depends(get_series_cache)]
WriteAuth = Depends(require_write_token)
