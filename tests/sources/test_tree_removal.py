"""remove_tree: any depth, links removed and never followed (issue 24: shutil.rmtree recursed per level)."""

from __future__ import annotations

import os
import shutil

import pytest

from gate.sources.tree_removal import remove_tree

DEPTH = 3000        # past Python's recursion limit, and past PATH_MAX as one path


def _deep(root, depth: int = DEPTH) -> None:  # noqa: ANN001
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("level", dir_fd=fd)
        below = os.open("level", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    with open(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd), "w") as leaf:
        leaf.write("x")
    os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path):
    root = tmp_path / "deep"
    root.mkdir()
    _deep(root)
    with pytest.raises(RecursionError):     # what the planner met
        shutil.rmtree(root)
    remove_tree(root)
    assert not root.exists()


def test_links_are_removed_and_their_targets_kept(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "to-dir").symlink_to(outside)
    (root / "to-file").symlink_to(outside / "keep.txt")
    (root / "sub").chmod(0o500)             # a folder the revision made read-only
    remove_tree(root)
    assert not root.exists() and (outside / "keep.txt").read_text() == "kept"


def test_a_missing_path_or_a_file_is_fine(tmp_path):
    remove_tree(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    remove_tree(tmp_path / "file")
    assert not (tmp_path / "file").exists()
