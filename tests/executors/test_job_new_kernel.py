from pathlib import Path

from gate.executors.job import baseline_declaration

MANIFEST = """
[[kernel]]
name = "{name}"
sources = ["k.cu"]
workload = "gemm"
shapes = [{{m = 16, n = 16, k = 16}}]
nvcc_flags = ["--maxrregcount=24"]
"""


def _repo(tmp_path: Path, manifest: str) -> Path:
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "gate.toml").write_text(manifest)
    return tmp_path


def test_a_baseline_that_declares_the_kernel_is_built_from_its_own_declaration(tmp_path):
    declared, note = baseline_declaration(_repo(tmp_path, MANIFEST.format(name="gemm")), "gemm")
    assert declared is not None and declared.nvcc_flags == ["--maxrregcount=24"] and note == ""


def test_a_baseline_without_the_kernel_makes_it_a_new_kernel(tmp_path):
    assert baseline_declaration(_repo(tmp_path, MANIFEST.format(name="other")), "gemm") == (None, "")


def test_an_unreadable_baseline_manifest_is_not_taken_for_a_new_kernel(tmp_path):
    declared, note = baseline_declaration(_repo(tmp_path, "[[kernel]]\nnonsense = 1\n"), "gemm")
    assert declared is None and "built as the candidate's declares" in note
