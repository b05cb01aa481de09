"""Shared test settings. GPU tests run only with `-m gpu` on a machine with CUDA."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = config.getoption("-m") or ""
    if "gpu" in markexpr:
        return
    skip = pytest.mark.skip(reason="GPU test: run on the device machine with `-m gpu`")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under `--dist loadgroup` (scripts/test.sh) each xdist worker tags the id of a test marked
    `xdist_group` with `@<group>`, and the scheduler keeps a group on one worker. Where the tag does
    not take (pytest-xdist#1386) the groups are spread without a word and the tests that share one
    build or one server race: such a test errors here, before its fixtures, saying why."""
    if getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group") \
            and "@" not in item.nodeid:
        pytest.fail("--dist loadgroup did not group this test: this pytest-xdist does not support this "
                    "pytest (pytest-dev/pytest-xdist#1386)", pytrace=False)


REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def object_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One object cache for the whole run (`GATE_BUILD_CACHE_DIR`, which every `gate` the tests start
    inherits), shared by the xdist workers: a test that compiles FlashCore's kernels or the sample's
    GEMM reuses what another test compiled from the same inputs, as a service's jobs share theirs.
    Safe to share: objects are keyed by everything that can change their bytes and land by atomic
    rename (gate/compiling/build_cache.py). A test about the cache itself passes a cache of its own."""
    base = tmp_path_factory.getbasetemp()
    cache = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "object-cache"
    cache.mkdir(exist_ok=True)
    cache.chmod(0o777)           # the box's user writes it where the gate runs as root (gate/box.py)
    before = os.environ.get("GATE_BUILD_CACHE_DIR")
    os.environ["GATE_BUILD_CACHE_DIR"] = str(cache)
    yield cache
    if before is None:
        os.environ.pop("GATE_BUILD_CACHE_DIR", None)
    else:
        os.environ["GATE_BUILD_CACHE_DIR"] = before


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """pytest's own, readable by others: compiles and the GPU child run as an unprivileged user in the
    box (gate/box.py), and pytest makes the directory 0700."""
    tmp_path.chmod(0o755)
    return tmp_path


@pytest.fixture
def ncu_fixture() -> Callable[[str], Path]:
    """Path of a recorded .ncu-rep: the shared fixtures beside the repo (`../shared/fixtures`),
    else the committed copy in tests/fixtures/ncu; skips, saying where it looked, if neither has it."""

    def find(name: str) -> Path:
        for folder in (REPO_ROOT.parent / "shared" / "fixtures", REPO_ROOT / "tests" / "fixtures" / "ncu"):
            if (folder / name).is_file():
                return folder / name
        pytest.skip(f"{name} is neither in ../shared/fixtures nor in tests/fixtures/ncu")

    return find


# --- databases: storage and API tests run against SQLite and PostgreSQL -------------------------

PG_SERVER = "postgresql+psycopg://postgres@127.0.0.1:5432"


@pytest.fixture(scope="session")
def postgres_database() -> str:
    """A fresh PostgreSQL database for this test session (`gate_test_<random>`), dropped after."""
    import uuid

    import psycopg

    name = f"gate_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"{PG_SERVER}/{name}"
    with psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path) -> str:  # noqa: ANN001
    """An empty database migrated to head: a SQLite file, or the session's PostgreSQL database reset."""
    from sqlalchemy import text

    from gate.storage.db import make_engine
    from gate.storage.schema import upgrade

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'gate.db'}"
    else:
        url = request.getfixturevalue("postgres_database")
        engine = make_engine(url)
        with engine.begin() as conn:
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        engine.dispose()
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture
def store(database_url: str):  # noqa: ANN201
    """The door to the migrated database (`gate.storage.unit.Store`)."""
    from gate.storage.unit import Store

    store = Store.from_url(database_url)
    yield store
    store.dispose()


@pytest.fixture
def session_factory(store):  # noqa: ANN001, ANN201
    """Sessions on the store's engine, for tests that write or read rows behind the door."""
    from gate.storage.db import make_session_factory

    return make_session_factory(store.engine)


@pytest.fixture
def side_host_env(tmp_path, monkeypatch) -> Path:
    """A side host started now can import `side_host_fakes` (`--backend side_host_fakes.BACKEND`) and
    logs its calls to the returned file."""
    log = tmp_path / "fake-side.log"
    here = str(Path(__file__).parent / "fakes")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_SIDE_LOG", str(log))
    return log
