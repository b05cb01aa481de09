"""The working tree as a commit: real git, the user's index and refs untouched."""

import subprocess
from pathlib import Path

import pytest

from gate.errors import GateError
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


def test_the_gates_data_folder_inside_the_repository_is_never_snapshotted(tmp_path):
    """A data folder in the repository (GATE_DATA_DIR=.gate) is not an uncommitted change: its
    mirrors, builds and reports stay out, and the edits beside it are still gated."""
    repo, _ = make_repo(tmp_path)
    data = repo / ".gate"
    (data / "mirrors").mkdir(parents=True)
    (data / "mirrors" / "HEAD").write_text("ref: refs/heads/main\n")
    (data / "build-cache").mkdir()
    (data / "build-cache" / "k.o").write_bytes(b"\x7fELF")
    assert snapshot(repo, exclude=(data,)) is None
    (repo / "kernels" / "wmma_gemm.cu").write_text("// edited\n")
    sha = snapshot(repo, exclude=(data,))
    names = git(repo, "ls-tree", "-r", "--name-only", sha).splitlines()
    assert "kernels/wmma_gemm.cu" in names and not [n for n in names if n.startswith(".gate/")]


def test_a_data_folder_outside_the_repository_changes_nothing(tmp_path):
    repo, _ = make_repo(tmp_path)
    (repo / "notes.txt").write_text("new\n")
    sha = snapshot(repo, exclude=(tmp_path / "elsewhere",))
    assert "notes.txt" in git(repo, "ls-tree", "-r", "--name-only", sha)


def test_a_data_folder_that_is_the_repository_is_refused_by_name(tmp_path):
    repo, _ = make_repo(tmp_path)
    with pytest.raises(GateError, match="is the repository itself: set GATE_DATA_DIR"):
        snapshot(repo, exclude=(repo,))
