"""The merge base of a pull request: the baseline a PR is timed against.

GitHub's `pull_request.base.sha` is the base branch's tip when the event fired; if the base branch
moved after the PR branched off, timing against the tip would blame the PR for others' changes.
The merge base is asked of git: directly in a local repository (a path or `file://` URL), else in
the source mirror after a fetch. When neither works, the caller keeps the base tip and logs so.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from gate.errors import SourceError

log = logging.getLogger(__name__)

GIT_TIMEOUT_S = 60.0


def local_path(url: str) -> Path | None:
    """The directory of a local repository given as a path or a `file://` URL; None for remotes."""
    if url.startswith("file://"):
        return Path(unquote(urlparse(url).path))
    if "://" in url or ("@" in url and ":" in url):
        return None
    return Path(url).expanduser()


def merge_base(git_dir: Path, base_sha: str, head_sha: str) -> str:
    """`git merge-base base head` in `git_dir`. Both must be full shas (checked by the caller)."""
    cmd = ["git", "merge-base", "--end-of-options", base_sha, head_sha]
    try:
        proc = subprocess.run(cmd, cwd=git_dir, capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              check=False, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"git merge-base in {git_dir}: {exc}") from exc
    if proc.returncode != 0 or not proc.stdout.strip():
        raise SourceError(f"git merge-base {base_sha[:12]} {head_sha[:12]}: {proc.stderr.strip() or 'none'}")
    return proc.stdout.strip()


def find_merge_base(url: str, base_sha: str, head_sha: str, mirror: Any = None) -> str | None:
    """The merge base, or None (logged) when it cannot be computed here."""
    from gate.sources.policy import FetchPolicy

    try:
        (getattr(mirror, "policy", None) or FetchPolicy.from_env()).check(url)   # a local path too
        path = local_path(url)
        if path is not None and path.is_dir():
            return merge_base(path, base_sha, head_sha)
        if mirror is not None:
            return merge_base(Path(mirror.update(url)), base_sha, head_sha)
        reason = "no source mirror"
    except SourceError as exc:
        reason = str(exc)
    log.warning("merge base of %s..%s in %s unknown (%s): timing against the base branch tip",
                base_sha[:12], head_sha[:12], url, reason)
    return None
