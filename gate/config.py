"""Settings: environment variables with the prefix `GATE_`, read once through `get_settings()`.

Tests override with `get_settings.cache_clear()` after setting the environment, or pass a
`Settings(...)` to `create_app`.

The data folder (mirrors, workspaces, build cache, artifacts and the default SQLite database) never
defaults to a path under the working directory: `cd myrepo && gate run --repo .` would then gate its
own cache as uncommitted changes. `gate run` keeps it in the user's state folder; the long-running
commands (`serve`, `worker`, `migrate`) in `/var/lib/flashcore-gate` when root, else the same state
folder. `GATE_DATA_DIR` overrides both.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from gate.domain.job import RunOptions


def _split(value: object) -> object:
    """`GATE_OUTBOUND_WEBHOOKS=http://a,http://b` -> ["http://a", "http://b"]."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_split)]

APP_DIR_NAME = "flashcore-gate"


def user_state_dir() -> Path:
    """`$XDG_STATE_HOME/flashcore-gate`, else `~/.local/state/flashcore-gate` (the XDG Base Directory
    specification's place for state that outlives a run but is no user document: caches, histories)."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / APP_DIR_NAME


def service_data_dir() -> Path:
    """A service's folder (the Filesystem Hierarchy Standard's /var/lib) when root, else the user's."""
    return Path("/var/lib") / APP_DIR_NAME if os.geteuid() == 0 else user_state_dir()


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GATE_", extra="ignore")

    database_url: str = ""                        # default: SQLite at <data_dir>/gate.db
    data_dir: Path = Field(default_factory=user_state_dir)
    build_cache_dir: Path | None = None           # the object cache; default: <data_dir>/build-cache
    api_token: str | None = None                  # when set, every write needs `Bearer <token>`
    read_token_required: bool = False             # reads (pages, JSON) need the token too; /healthz stays open
    executor: str = Field("local", pattern="^(local|celery)$")
    broker_url: str = "redis://127.0.0.1:6379/0"
    public_url: str = "http://127.0.0.1:8000"     # base of target_url links in statuses
    # Every request's body, 413 past it; GitHub sends webhook payloads of 25 MB at most.
    max_body_bytes: int = Field(25 * 1024 * 1024, ge=1024)
    # Bodies read before their sender is known (webhooks: the HMAC needs the body; writes when no
    # GATE_API_TOKEN is set), all requests together, counted as their bytes arrive; past it 503 +
    # Retry-After and the connection closes (gate/api/body_limit.py, with the bodies' deadline).
    unauthenticated_body_bytes: int = Field(32 * 1024 * 1024, ge=1024)
    # Planning (git fetches, gate.toml) runs on its own threads; a full queue answers 503.
    planner_workers: int = Field(4, ge=1, le=64)
    planner_queue: int = Field(64, ge=1)
    # Open connections at once (gate/api/connections.py): past it the idlest is closed.
    max_connections: int = Field(1024, ge=16)

    github_api_url: str = "https://api.github.com"
    github_token: str | None = None               # commit statuses
    github_app_id: str | None = None              # Check Runs (with the private key)
    github_app_private_key: str | None = None     # PEM text, or a path to a PEM file
    github_webhook_secret: str | None = None
    github_branches: CommaList = Field(default_factory=list)   # push branches gated besides the default
    github_fork_approval: bool = True             # fork PRs wait for a maintainer's label or comment
    github_approval_label: str = "gate:approved"
    github_approval_comment: str = "/gate run"

    outbound_webhooks: CommaList = Field(default_factory=list)  # URLs that receive verdict JSON
    outbound_webhook_secret: str | None = None

    nvcc_path: str = "nvcc"
    ncu_path: str = "ncu"
    ncu_clock_control: str = Field("base", pattern="^(base|none)$")
    bench_budget_s: float = 20.0                  # per shape
    clock_policy: str = Field("observe", pattern="^(observe|lock)$")   # gate.domain.environment.ClockPolicy
    # Hours an earlier job's figures stand for a kernel whose inputs are unchanged (docs/reuse.md); 0: never.
    reuse_max_age_h: float = Field(168.0, ge=0)
    warm_history: bool = True                     # read kernel histories into memory at start
    # Start each job's GPU child before its job, when the one before ends (gate/executors/spare.py):
    # torch and the CUDA context are loaded by the time the job comes. Off: each job starts its own.
    spare_child: bool = True
    # torch headers precompiled for the binding compile (gate/compiling/torch_pch.py): made by `gate pch`
    # and in the background when serve, worker and demo start with a GPU; `off` (or empty): none made, none used.
    torch_pch: CommaList = Field(default_factory=lambda: ["torch/extension.h"])

    @field_validator("torch_pch")
    @classmethod
    def _plain_header_names(cls, headers: list[str]) -> list[str]:
        headers = [h for h in headers if h != "off"]
        for header in headers:
            if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.(h|hpp|hh)", header) or ".." in header.split("/"):
                raise ValueError(f"GATE_TORCH_PCH: {header!r} is not a header's include name (torch/extension.h)")
        return headers

    def pch_dir(self) -> Path | None:
        """The precompiled torch headers' folder: beside the object cache, never inside it (a job
        writes the cache; it only reads these)."""
        return Path(self.data_dir).resolve() / "torch-pch" if self.torch_pch else None

    @model_validator(mode="after")
    def _database_follows_data_dir(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{Path(self.data_dir).resolve() / 'gate.db'}"
        return self

    @model_validator(mode="after")
    def _read_token_has_a_token(self) -> Settings:
        if self.read_token_required and not self.api_token:
            raise ValueError("GATE_READ_TOKEN_REQUIRED needs GATE_API_TOKEN: reads would need a token "
                             "that does not exist")
        return self

    def private_paths(self) -> list[Path]:
        """What no box may read (`gate.box.keep_private`): the data folder, the SQLite database and
        its journals wherever they lie, and the GitHub App's private key file."""
        paths = [Path(self.data_dir)]
        if self.database_url.startswith("sqlite:///"):
            db = Path(self.database_url.removeprefix("sqlite:///").split("?")[0])
            paths += [db.with_name(db.name + end) for end in ("", "-wal", "-shm", "-journal") if db.name]
        key = self.github_app_private_key
        if key and "-----BEGIN" not in key:
            paths.append(Path(key).expanduser())
        return paths

    def run_options(self) -> RunOptions:
        """What a job's GPU child is told of these settings (the one translation of them)."""
        cache = Path(self.build_cache_dir or Path(self.data_dir).resolve() / "build-cache")
        return RunOptions(nvcc_path=self.nvcc_path, ncu_path=self.ncu_path,
                          ncu_clock_control=self.ncu_clock_control, bench_budget_s=self.bench_budget_s,
                          clock_policy=self.clock_policy, reuse_max_age_h=self.reuse_max_age_h,
                          build_cache_dir=str(cache.resolve() if self.build_cache_dir else cache),
                          pch_dir=str(self.pch_dir() or ""))


class ServiceSettings(Settings):
    """The settings of the long-running commands: only the data folder's default differs."""

    data_dir: Path = Field(default_factory=service_data_dir)


@lru_cache
def get_settings(service: bool = False) -> Settings:
    """The process's settings; whatever they name as private is hidden from every box it makes."""
    from gate import box

    settings = ServiceSettings() if service else Settings()
    box.keep_private(settings.private_paths())
    return settings
