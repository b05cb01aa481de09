"""A commit's place in its repository's history (issue 45): first-parent depth, and whether the
branch's first-parent line holds it (a merged branch's commits are reachable but not on it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gate.sources.mirror import first_parent_place

GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name)
    _git(repo, "add", name)
    _git(repo, "commit", "-qm", name)
    return _git(repo, "rev-parse", "HEAD")


def test_depth_and_line_of_main_a_merged_branch_and_an_open_one(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    a, b = _commit(repo, "a"), _commit(repo, "b")
    _git(repo, "checkout", "-q", "-b", "topic")
    t = _commit(repo, "t")
    _git(repo, "checkout", "-q", "main")
    c = _commit(repo, "c")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge topic", "topic")
    merge = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "open", b)
    o = _commit(repo, "o")
    assert [first_parent_place(repo, sha, "main") for sha in (a, b, c, merge)] == [
        (1, True), (2, True), (3, True), (4, True)]
    assert first_parent_place(repo, t, "main") == (3, False)      # merged, reachable, not on the line
    assert first_parent_place(repo, o, "main") == (3, False)
    assert first_parent_place(repo, o, "open") == (3, True)
    assert first_parent_place(repo, a, "gone") == (1, False)      # no such branch: nothing on it
