"""The uncommitted state of a local repository as a commit, so `gate run` can gate the working tree
against HEAD (the local loop: edit, run, read the verdict) through the same mirror and checkout as
any commit. Built with git plumbing only, from a temporary index: the user's index, branches, stash
and files are untouched; the commit is reachable from no ref (the mirror fetches it by sha) and
git's gc removes it in time.

The folders in `exclude` (the gate's own data folder, wherever `GATE_DATA_DIR` puts it) never enter
the snapshot: a data folder inside the repository would otherwise read as uncommitted changes on
every run after the first, and copy its builds and `.ncu-rep` reports into each later candidate.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gate.errors import GateError
from gate.sources.mirror import _git

_IDENTITY = {"GIT_AUTHOR_NAME": "gate", "GIT_AUTHOR_EMAIL": "gate@localhost",
             "GIT_COMMITTER_NAME": "gate", "GIT_COMMITTER_EMAIL": "gate@localhost"}


def snapshot(repo_dir: Path, exclude: tuple[Path, ...] = ()) -> str | None:
    """The sha of a commit (parent HEAD) of the working tree less `exclude`; None when it equals HEAD."""
    repo_dir = Path(repo_dir)
    head_tree = _git(["rev-parse", "--verify", "HEAD^{tree}"], cwd=repo_dir).stdout.strip()
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd=repo_dir).stdout.strip())
    with tempfile.TemporaryDirectory(prefix="gate-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(["read-tree", "HEAD"], cwd=top, env=index)
        _git(["add", "-A", "--", ".", *_excluded(top, exclude)], cwd=top, env=index)
        tree = _git(["write-tree"], cwd=top, env=index).stdout.strip()
    if tree == head_tree:
        return None
    return _git(["commit-tree", tree, "-p", "HEAD", "-m", "gate: uncommitted working tree"], cwd=top,
                env=_IDENTITY).stdout.strip()


def _excluded(top: Path, folders: tuple[Path, ...]) -> list[str]:
    """git pathspecs that leave out each of `folders` lying inside the work tree `top`."""
    top = top.resolve()
    specs = []
    for folder in folders:
        resolved = Path(folder).resolve()
        if resolved == top:
            raise GateError(f"the gate's data folder {folder} is the repository itself: set GATE_DATA_DIR "
                             "to a folder outside it")
        if resolved.is_relative_to(top):
            specs.append(f":(exclude,literal){resolved.relative_to(top).as_posix()}")
    return specs
