"""An app on a real database with a fake pipeline and source reader injected."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from service_fakes import FakePipeline, FakeSources

from gate.api.app import create_app
from gate.config import Settings


@pytest.fixture
def pipeline() -> FakePipeline:
    return FakePipeline()


@pytest.fixture
def make_client(database_url, tmp_path, pipeline):  # noqa: ANN001, ANN201
    clients = []

    def make(*, token: str | None = None, embedded_executor: bool = True) -> TestClient:
        settings = Settings(database_url=database_url, data_dir=tmp_path / "data", api_token=token)
        app = create_app(settings, gate_job=pipeline, sources=FakeSources(), embedded_executor=embedded_executor)
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def repo_dir(tmp_path) -> str:
    path = tmp_path / "flash"
    path.mkdir()
    return str(path)
