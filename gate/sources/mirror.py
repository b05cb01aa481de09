"""Fetch a revision into an isolated workspace through a bare mirror cache per repository.

`Mirror(root)` keeps one `git clone --mirror` per repository under `root`, keyed by a hash of the
repository's URL (or resolved local path), and refreshes it with `git fetch`. A checkout is a
`git archive` export of the exact sha: the workspace holds no `.git`, so the code under test cannot
reach the mirror, and archive members are extracted with tarfile's `data` filter (no links or paths
out of the workspace).

Every git call takes an argument list; user-given revisions are refused when they start with `-`
and are passed after `--end-of-options`, so they are never read as options.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import re
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from gate.domain.job import Checkout
from gate.errors import SourceError

_FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
GIT_TIMEOUT_S = 600.0


def _git(args: list[str], *, cwd: Path | None = None, binary: bool = False,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run git with an argument list; raise SourceError with git's own message on failure."""
    cmd = ["git", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})})
    except FileNotFoundError as exc:
        raise SourceError("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise SourceError(f"git {args[0]} timed out after {GIT_TIMEOUT_S:.0f} s") from exc
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace").strip()
        raise SourceError(f"git {args[0]} failed: {stderr.splitlines()[-1] if stderr else proc.returncode}")
    return proc if binary else subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"))


def check_rev(rev: str) -> str:
    """Refuse revisions git could read as an option or that carry odd characters."""
    if not rev or rev.startswith("-") or any(c.isspace() or ord(c) < 32 for c in rev):
        raise SourceError(f"refusing revision {rev!r}")
    return rev


class Mirror:
    """Bare mirrors of the repositories the gate has seen, one directory each under `root`."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @staticmethod
    def _local(repo: str) -> Path | None:
        path = Path(repo)
        return path.resolve() if "://" not in repo and path.is_dir() else None

    def _key(self, repo: str) -> str:
        local = self._local(repo)
        canonical = str(local) if local else repo.rstrip("/")
        return hashlib.sha256(canonical.encode()).hexdigest()[:20]

    def path(self, repo: str) -> Path:
        return self.root / f"{self._key(repo)}.git"

    @contextmanager
    def _locked(self, repo: str) -> Iterator[Path]:
        """One writer per mirror: concurrent jobs of one repository wait for each other's fetch."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f"{self._key(repo)}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield self.path(repo)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def update(self, repo: str) -> Path:
        """Clone the mirror on first use, else fetch every ref; return the mirror's path."""
        if repo.startswith("-"):
            raise SourceError(f"refusing repository {repo!r}")
        local = self._local(repo)
        if local and not (local / "HEAD").is_file() and not (local / ".git").exists():
            raise SourceError(f"{repo} is not a git repository")
        url = str(local) if local else repo
        with self._locked(repo) as mirror:
            if not (mirror / "HEAD").exists():
                _git(["clone", "--mirror", "--quiet", "--", url, str(mirror)])
            else:
                _git(["fetch", "--prune", "--quiet", "origin"], cwd=mirror)
        return mirror

    def resolve(self, repo: str, rev: str) -> str:
        """The full sha of `rev`. A local path is asked directly (its HEAD is the user's HEAD)."""
        check_rev(rev)
        mirror = self.update(repo)
        local = self._local(repo)
        where = local if local else mirror
        try:
            out = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd=where)
        except SourceError as exc:
            raise SourceError(f"revision {rev!r} does not exist in {repo}") from exc
        sha = out.stdout.strip()
        if local and not self._has(mirror, sha):
            # A commit reachable from no ref (e.g. a detached HEAD) is fetched by its sha.
            with self._locked(repo):
                _git(["fetch", "--quiet", "origin", sha], cwd=mirror)
        return sha

    @staticmethod
    def _has(mirror: Path, sha: str) -> bool:
        try:
            _git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=mirror)
        except SourceError:
            return False
        return True

    def _mirror_with(self, repo: str, sha: str) -> Path:
        if not _FULL_SHA.match(sha):
            raise SourceError(f"expected a full sha, got {sha!r} (resolve it first)")
        mirror = self.path(repo)
        if not self._has(mirror, sha):
            mirror = self.update(repo)
            if not self._has(mirror, sha):
                raise SourceError(f"commit {sha} does not exist in {repo}")
        return mirror

    def checkout(self, repo: str, sha: str, workspace: Path) -> Checkout:
        """Export the tree at `sha` into `workspace` (created; must be empty or absent)."""
        mirror = self._mirror_with(repo, sha)
        workspace.mkdir(parents=True, exist_ok=True)
        if any(workspace.iterdir()):
            raise SourceError(f"workspace {workspace} is not empty")
        archive = _git(["archive", "--format=tar", "--end-of-options", sha], cwd=mirror, binary=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            try:
                tar.extractall(workspace, filter="data")
            except tarfile.FilterError as exc:
                raise SourceError(f"commit {sha}: refusing archive member: {exc}") from exc
        return Checkout(sha=sha, path=str(workspace))

    def commit_info(self, repo: str, sha: str) -> dict:
        """`author`, `message`, `committed_at` (aware datetime) and `parent_sha` (None for a root)."""
        mirror = self._mirror_with(repo, sha)
        out = _git(["show", "-s", "--format=%an <%ae>%x00%cI%x00%P%x00%B", "--end-of-options", sha],
                   cwd=mirror).stdout
        author, committed, parents, message = out.split("\x00", 3)
        return {
            "author": author,
            "message": message.strip(),
            "committed_at": datetime.fromisoformat(committed.strip()),
            "parent_sha": parents.split()[0] if parents.split() else None,
        }
