"""`gate run` without --sha on a repository with uncommitted changes gates the working tree."""

import json
import shutil

import pytest

from tests.commands.test_run_cli import gate_run
from tests.samples.build import KERNEL_FILE, apply_variant, make_repo

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


@pytest.mark.nvcc
@needs_nvcc
def test_an_uncommitted_compile_error_is_rejected_and_the_first_line_says_working_tree(tmp_path):
    repo, shas = make_repo(tmp_path)
    source = repo / KERNEL_FILE
    source.write_text(apply_variant(source.read_text(), "compile_error"))
    proc = gate_run(tmp_path, "--repo", str(repo))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == f"working tree of {repo} (uncommitted changes) against HEAD {shas['base'][:12]}"
    assert 'identifier "zero_value" is undefined' in proc.stdout
    committed = gate_run(tmp_path, "--repo", str(repo), "--sha", "HEAD", "--json")   # --sha: the commit
    doc = json.loads(committed.stdout)
    assert (doc["sha"], doc["working_tree"]) == (shas["base"], False)
    assert doc["kernels"][0]["result"]["candidate"]["static"]["status"] == "passed"


def test_a_directory_that_is_not_a_git_repository_is_reported_as_such(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "gate.toml").write_text("")
    proc = gate_run(tmp_path, "--repo", str(plain))
    assert proc.returncode == 2
    assert f"{plain} is not a git repository" in proc.stderr
