"""Issue 43: an unchanged side is never compiled twice. An object's key reads the compile's command
without the absolute paths outside the checkout (the compiler, torch's and Python's include folders),
which moved between runs of one unchanged side: another venv, a copied work tree, nvcc reached
through another link. The versions of those tools stand for what the folders hold."""

import shutil
import subprocess
from pathlib import Path

import pytest

from gate.compiling.build_cache import Toolchain
from gate.compiling.objects import key_of, portable
from gate.domain.job import JobOrder, RunOptions
from gate.executors.job import JobContext, gate_job
from gate.nvidia.compiler import cuda_home
from gate.sources.mirror import Mirror

VERSIONS = Toolchain("2.13.0", "12.8", "nvcc 13.0")


def test_the_key_reads_absolute_tool_paths_by_their_last_parts_and_keeps_the_rest(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    here = ["/usr/local/cuda-13.0/bin/nvcc", "-O3", "-I.", "-I/home/a/.venv/lib/site-packages/torch/include",
            "-DTORCH_EXTENSION_NAME=k"]
    there = ["/opt/cuda/bin/nvcc", "-O3", "-I.", "-I/srv/copy-7/.venv/lib/site-packages/torch/include",
             "-DTORCH_EXTENSION_NAME=k"]
    assert portable(here, tmp_path) == [".../bin/nvcc", "-O3", "-I.", "-I.../torch/include", "-DTORCH_EXTENSION_NAME=k"]
    assert key_of(tmp_path / "k.cu", "k.cu", here, VERSIONS, tmp_path) == \
        key_of(tmp_path / "k.cu", "k.cu", there, VERSIONS, tmp_path)
    for changed in (here[:2] + ["-O2"] + here[3:], here + ["--maxrregcount=24"], here[:3] + here[4:]):
        assert key_of(tmp_path / "k.cu", "k.cu", changed, VERSIONS, tmp_path) != \
            key_of(tmp_path / "k.cu", "k.cu", here, VERSIONS, tmp_path)


def _git(repo: Path, *args: str) -> str:
    ident = ["-c", "user.name=gate", "-c", "user.email=gate@example.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *ident, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_gating_twice_from_other_data_folders_and_another_nvcc_path_compiles_nothing_again(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text('#include "tile.cuh"\n__global__ void k(float* y) { y[threadIdx.x] = TILE; }\n')
    (repo / "tile.cuh").write_text("#define TILE 16\n")
    (repo / "gate.toml").write_text('[[kernel]]\nname = "k"\nsources = ["k.cu"]\nworkload = "gemm"\n'
                                    'arch = ["sm_80"]\nshapes = [{m = 16, n = 16, k = 16}]\n')
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "k")
    sha = _git(repo, "rev-parse", "HEAD")
    cache = tmp_path / "objects"
    # one nvcc reached by two paths (the one on PATH, and the toolkit's own), which the box shows both
    paths = {"first": shutil.which("nvcc"), "second": str(cuda_home(shutil.which("nvcc")) / "bin" / "nvcc")}
    if paths["first"] == paths["second"]:
        pytest.skip("nvcc on PATH is the toolkit's own: no second path to reach it by")
    logs = []
    for run, link in paths.items():
        data = tmp_path / run / "data"
        events = []
        outcome = gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=None, kernel="k"),
                           JobContext(data_dir=data, mirror=Mirror(data / "mirrors"), on_event=events.append,
                                      options=RunOptions(gpu_stages=False, nvcc_path=str(link),
                                                         build_cache_dir=str(cache))))
        assert outcome.result.candidate.static.status.value == "passed", outcome.result.candidate.static.reason
        logs.append((outcome.result.candidate.static.log, [e.detail for e in events if "compiled in" in e.detail]))
    assert "(object cache hit)" not in logs[0][0] and logs[0][1]
    assert "(object cache hit)" in logs[1][0] and logs[1][1] == [], logs[1]
