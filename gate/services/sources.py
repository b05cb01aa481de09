"""What planning needs to know about a repository at a revision, behind a small protocol.

The default reads through the pipeline's bare-mirror cache (`gate.sources.mirror.Mirror`) and the
manifest loader (`gate.manifest.load.load_manifest`); tests hand in their own implementation.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from gate.domain import Manifest


class SourceReader(Protocol):
    def resolve(self, repo: str, rev: str) -> str:
        """The full sha of `rev` in `repo`; raises SourceError naming the revision."""

    def commit_info(self, repo: str, sha: str) -> dict[str, Any]:
        """author, message, committed_at, parent_sha (None for a root commit)."""

    def manifest(self, repo: str, sha: str) -> Manifest:
        """gate.toml at `sha`, validated; raises ManifestError naming the key or path."""


class MirrorSources:
    """The production reader: a bare mirror per repository under `<data_dir>/mirrors`."""

    def __init__(self, data_dir: Path):
        from gate.sources.mirror import Mirror

        self.mirror = Mirror(Path(data_dir) / "mirrors")
        self.workspaces = Path(data_dir) / "workspaces"

    def resolve(self, repo: str, rev: str) -> str:
        return self.mirror.resolve(repo, rev)

    def commit_info(self, repo: str, sha: str) -> dict[str, Any]:
        return self.mirror.commit_info(repo, sha)

    def manifest(self, repo: str, sha: str) -> Manifest:
        from gate.manifest.load import load_manifest

        self.workspaces.mkdir(parents=True, exist_ok=True)
        workspace = Path(tempfile.mkdtemp(prefix=f"plan-{sha[:12]}-", dir=self.workspaces))
        try:
            checkout = self.mirror.checkout(repo, sha, workspace)
            return load_manifest(Path(checkout.path))
        finally:
            shutil.rmtree(workspace, ignore_errors=True)


def as_naive_utc(value: datetime | str | None) -> datetime | None:
    """Commit times arrive as ISO text or aware datetimes; the database stores naive UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value
