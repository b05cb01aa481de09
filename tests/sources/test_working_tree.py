"""The working tree as a commit: real git, the user's index and refs untouched."""

import subprocess
from pathlib import Path

from gate.sources.working_tree import snapshot
from tests.samples.build import commit_files, make_repo


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def test_a_clean_repository_has_no_snapshot(tmp_path):
    repo, _ = make_repo(tmp_path)
    assert snapshot(repo) is None


def test_edits_and_new_files_become_a_commit_on_head_without_touching_the_index(tmp_path):
    repo, shas = make_repo(tmp_path)
    commit_files(repo, {".gitignore": "build/\n"}, "ignore build/")
    head = git(repo, "rev-parse", "HEAD")
    (repo / "kernels" / "wmma_gemm.cu").write_text("// edited\n")
    (repo / "notes.txt").write_text("new, untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("ignored\n")
    status_before = git(repo, "status", "--porcelain")
    sha = snapshot(repo)
    assert sha and git(repo, "rev-parse", f"{sha}^") == head
    assert git(repo, "show", f"{sha}:kernels/wmma_gemm.cu") == "// edited"
    assert git(repo, "show", f"{sha}:notes.txt") == "new, untracked"
    assert "build/out.o" not in git(repo, "ls-tree", "-r", "--name-only", sha)
    assert git(repo, "status", "--porcelain") == status_before          # index and files as they were
    assert git(repo, "rev-parse", "HEAD") == head and sha not in git(repo, "for-each-ref")
