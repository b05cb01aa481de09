"""What planning needs to know about a repository at a revision, behind a small protocol.

The default reads through the pipeline's bare-mirror cache (`gate.sources.mirror.Mirror`) and the
manifest loader (`gate.manifest.load.load_manifest`); tests hand in their own implementation.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gate.domain import Manifest
from gate.domain.server_paths import hide
from gate.errors import GateError

if TYPE_CHECKING:
    from gate.sources.policy import FetchPolicy

log = logging.getLogger(__name__)


class SourceReader(Protocol):
    def resolve(self, repo: str, rev: str) -> str:
        """The full sha of `rev` in `repo`; raises SourceError naming the revision."""

    def commit_info(self, repo: str, sha: str) -> dict[str, Any]:
        """author, message, committed_at, parent_sha (None for a root commit)."""

    def manifest(self, repo: str, sha: str) -> Manifest:
        """gate.toml at `sha`, validated; raises ManifestError naming the key or path."""

    def commit_place(self, repo: str, sha: str, branch: str) -> tuple[int, bool]:
        """(first-parent depth of `sha`, whether it lies on `branch`'s first-parent line): where a
        kernel's history draws it (`gate.storage.commit_order`)."""


class MirrorSources:
    """The production reader: a bare mirror per repository under `<data_dir>/mirrors`.

    Its errors reach API answers and stored revisions: the data folder's absolute path in them
    (git names the mirror it ran in) is written `<data>`, so no answer shows the server's paths."""

    def __init__(self, data_dir: Path, policy: FetchPolicy | None = None):
        from gate.sources.mirror import Mirror

        from gate.sources.policy import FetchPolicy

        self.data_dir = Path(data_dir).resolve()
        # The data folder (database, mirrors of private repositories) is never gateable, whatever
        # GATE_ALLOW_LOCAL_REPOS says.
        self.mirror = Mirror(self.data_dir / "mirrors", (policy or FetchPolicy.from_env()).protecting(self.data_dir))
        self.workspaces = self.data_dir / "workspaces"

    def resolve(self, repo: str, rev: str) -> str:
        with self._redacted():
            return self.mirror.resolve(repo, rev)

    def commit_info(self, repo: str, sha: str) -> dict[str, Any]:
        with self._redacted():
            return self.mirror.commit_info(repo, sha)

    def commit_place(self, repo: str, sha: str, branch: str) -> tuple[int, bool]:
        with self._redacted():
            return self.mirror.commit_place(repo, sha, branch)

    def manifest(self, repo: str, sha: str) -> Manifest:
        from gate.manifest.load import load_manifest
        from gate.sources.tree_removal import remove_tree

        self.workspaces.mkdir(parents=True, exist_ok=True)
        workspace = Path(tempfile.mkdtemp(prefix=f"plan-{sha[:12]}-", dir=self.workspaces))
        try:
            with self._redacted():
                checkout = self.mirror.checkout(repo, sha, workspace)
                return load_manifest(Path(checkout.path))
        finally:
            try:
                remove_tree(workspace)
            except OSError as exc:          # a left-over temporary folder must not fail the plan
                log.warning("planning workspace %s not removed: %s", workspace.name, exc)

    @contextmanager
    def _redacted(self) -> Iterator[None]:
        try:
            yield
        except GateError as exc:
            text = str(exc)
            if hide(text, self.data_dir) == text:
                raise
            exc.args = (hide(text, self.data_dir), *exc.args[1:])
            raise


def as_naive_utc(value: datetime | str | None) -> datetime | None:
    """Commit times arrive as ISO text or aware datetimes; the database stores naive UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value
