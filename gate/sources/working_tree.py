"""The uncommitted state of a local repository as a commit, so `gate run` can gate the working tree
against HEAD (the local loop: edit, run, read the verdict) through the same mirror and checkout as
any commit.

`snapshot(repo_dir)` builds the commit with git plumbing only: a temporary index (`GIT_INDEX_FILE`)
filled from HEAD plus `git add -A` (so `.gitignore` applies), `write-tree`, `commit-tree -p HEAD`.
The user's index, branches, stash and files are untouched; the commit is reachable from no ref
(the mirror fetches it by sha) and git's gc removes it in time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gate.sources.mirror import _git

_IDENTITY = {"GIT_AUTHOR_NAME": "gate", "GIT_AUTHOR_EMAIL": "gate@localhost",
             "GIT_COMMITTER_NAME": "gate", "GIT_COMMITTER_EMAIL": "gate@localhost"}


def snapshot(repo_dir: Path) -> str | None:
    """The sha of a commit (parent HEAD) holding the working tree, or None when it equals HEAD."""
    repo_dir = Path(repo_dir)
    head_tree = _git(["rev-parse", "--verify", "HEAD^{tree}"], cwd=repo_dir).stdout.strip()
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd=repo_dir).stdout.strip())
    with tempfile.TemporaryDirectory(prefix="gate-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(["read-tree", "HEAD"], cwd=top, env=index)
        _git(["add", "-A", "--", "."], cwd=top, env=index)
        tree = _git(["write-tree"], cwd=top, env=index).stdout.strip()
    if tree == head_tree:
        return None
    return _git(["commit-tree", tree, "-p", "HEAD", "-m", "gate: uncommitted working tree"], cwd=top,
                env=_IDENTITY).stdout.strip()
