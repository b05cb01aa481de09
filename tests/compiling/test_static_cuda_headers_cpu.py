"""Issue 43: on a CPU machine, a source that includes torch's CUDA headers gets static figures.

A CPU build of torch lacks the one header its CUDA build generates (`c10/cuda/impl/cuda_cmake_macros.h`,
which `c10/cuda/CUDAMacros.h` includes): the gate offers its stand-in after torch's own folders, and
the CUDA libraries' headers come from the toolkit, or from the library wheels beside torch. Where a
header is truly missing, the stage names it and the progress line does not call it a compile error.
Needs nvcc and torch (a CPU wheel will do); skipped cleanly without them."""

import shutil
import subprocess
from pathlib import Path

import pytest

from gate.compiling import objects
from gate.compiling.static import _outcome
from gate.domain.job import JobOrder, RunOptions
from gate.executors.job import JobContext, gate_job
from gate.sources.mirror import Mirror

SOURCE = "#include <c10/cuda/CUDAStream.h>\n__global__ void k(float* y) { y[threadIdx.x] = 1.f; }\n"


def test_a_header_missing_from_the_toolchain_is_no_compile_error_in_the_progress_line():
    tools = type("Tools", (), {"torch": type("Facts", (), {"includes": ("/site/torch/include",)})()})()
    gap = objects.CompiledObject("a.cu", False, False, None, "/site/torch/include/ATen/cuda/CUDAContextLight.h:10:10: "
                                 "fatal error: cusparse.h: No such file or directory")
    assert _outcome(gap, tools) == "not compiled here: torch's headers include cusparse.h, which is not installed"
    own = objects.CompiledObject("a.cu", False, False, None, "a.cu(3): error: identifier \"x\" is undefined")
    assert _outcome(own, tools) == "compile error"
    assert _outcome(objects.CompiledObject("a.cu", True, False, None, ""), tools) == "compiled"


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_source_with_torchs_cuda_headers_gets_static_figures_on_a_cpu_machine(tmp_path):
    pytest.importorskip("torch")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text(SOURCE)
    (repo / "gate.toml").write_text('[[kernel]]\nname = "k"\nsources = ["k.cu"]\nworkload = "gemm"\n'
                                    'arch = ["sm_90"]\nshapes = [{m = 16, n = 16, k = 16}]\n')
    ident = ["-c", "user.name=gate", "-c", "user.email=gate@example.invalid", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "k"]):
        subprocess.run(["git", *ident, *args], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()
    data, events = tmp_path / "data", []
    outcome = gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=None, kernel="k"),
                       JobContext(data_dir=data, mirror=Mirror(data / "mirrors"), on_event=events.append,
                                  options=RunOptions(gpu_stages=False, build_cache_dir=str(data / "objects"))))
    static = outcome.result.candidate.static
    assert static.status.value == "passed", static.reason
    (fn,) = static.functions
    assert fn.registers > 0 and fn.arch == "sm_90"
    assert not any("compile error" in e.detail for e in events)
