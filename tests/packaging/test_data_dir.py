"""Where the gate keeps its data when nothing says: outside any repository, and the database with it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.config import ServiceSettings, Settings, get_settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in [n for n in os.environ if n.startswith("GATE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")           # where `gate run --repo .` is started
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


def test_gate_run_keeps_its_data_in_the_users_state_folder(clean_env):
    settings = Settings()
    assert settings.data_dir == clean_env / "home" / ".local" / "state" / "flashcore-gate"
    assert settings.database_url == f"sqlite:///{settings.data_dir / 'gate.db'}"
    assert not settings.data_dir.is_relative_to(Path.cwd())


def test_xdg_state_home_moves_the_users_state_folder(clean_env, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(clean_env / "state"))
    assert Settings().data_dir == clean_env / "state" / "flashcore-gate"


def test_a_service_run_as_root_keeps_its_data_in_var_lib(clean_env, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert ServiceSettings().data_dir == Path("/var/lib/flashcore-gate")
    assert get_settings(service=True).database_url == "sqlite:////var/lib/flashcore-gate/gate.db"


def test_a_service_run_as_a_user_keeps_its_data_in_the_users_state_folder(clean_env, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert ServiceSettings().data_dir == Settings().data_dir


def test_gate_data_dir_overrides_both_and_the_database_follows_it(clean_env, monkeypatch):
    monkeypatch.setenv("GATE_DATA_DIR", "relative/data")
    for settings in (Settings(), ServiceSettings()):
        assert settings.data_dir == Path("relative/data")
        assert settings.database_url == f"sqlite:///{clean_env / 'repo' / 'relative' / 'data' / 'gate.db'}"


def test_a_database_url_that_is_set_is_kept(clean_env, monkeypatch):
    monkeypatch.setenv("GATE_DATABASE_URL", "postgresql+psycopg://u@db/gate")
    assert Settings().database_url == "postgresql+psycopg://u@db/gate"
