"""A repository in the most common foreign layout (`.cu` with torch headers and the host function,
`main.cpp` with the PYBIND11_MODULE) through `gate run`, and the nvcc that every compile uses."""

import importlib.util
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from gate.compiling import objects
from gate.compiling.static import run_static
from gate.domain import KernelSpec, StageStatus
from gate.nvidia import sass
from tests.commands.test_run_cli import gate_run
from tests.samples.build import SAMPLES_DIR, make_repo

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
torch_here = importlib.util.find_spec("torch") is not None


@pytest.mark.nvcc
@needs_nvcc
@pytest.mark.skipif(torch_here, reason="torch is importable here: the static stage compiles as the build does")
def test_torch_headers_without_torch_are_incomplete_never_reject(tmp_path):
    repo, shas = make_repo(tmp_path, "torch_gemm")
    proc = gate_run(tmp_path, "--repo", str(repo), "--json")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (kernel,) = json.loads(proc.stdout)["kernels"]
    assert kernel["verdict"] == "incomplete"
    static = kernel["result"]["candidate"]["static"]
    assert static["status"] == "not_run"
    assert static["reason"].startswith("figures come from the build: gemm.cu include(s) torch headers")
    assert not any(r["outcome"] in ("fail", "error") for r in kernel["rules"])


@pytest.mark.nvcc
@needs_nvcc
@pytest.mark.skipif(not torch_here, reason="needs torch (the worker extra); a CPU-only build is enough")
def test_with_torch_the_static_stage_compiles_like_the_build(tmp_path):
    spec = KernelSpec(name="torch_gemm", sources=["gemm.cu", "main.cpp"], arch=["sm_90"])
    res = run_static(spec, SAMPLES_DIR / "torch_gemm", tmp_path / "out", cache_dir=tmp_path / "cache")
    assert res.status is StageStatus.PASSED, res.reason
    (fn,) = res.functions
    assert fn.function == "_Z17tiled_gemm_kernelPK6__halfS1_PS_iii" and fn.arch == "sm_90"
    assert fn.smem_bytes == 2 * 32 * 33 * 4 and fn.spill_bytes == 0 and 0 < fn.registers <= 255
    if res.sass_available:
        assert fn.sass_opcodes["FFMA"] > 0
    assert "-DTORCH_EXTENSION_NAME=torch_gemm" in res.log
    again = run_static(spec, SAMPLES_DIR / "torch_gemm", tmp_path / "out2", cache_dir=tmp_path / "cache")
    assert "(object cache hit)" in again.log and again.functions[0].registers == fn.registers


def test_a_torch_header_reached_through_a_local_header_counts(tmp_path):
    (tmp_path / "common.h").write_text('#pragma once\n#include <ATen/cuda/CUDAContext.h>\n')
    (tmp_path / "k.cu").write_text('#include "common.h"\n__global__ void k() {}\n')
    (tmp_path / "plain.cu").write_text('#include <cuda_fp16.h>\n__global__ void k() {}\n')
    assert objects.uses_torch(tmp_path / "k.cu", tmp_path)
    assert not objects.uses_torch(tmp_path / "plain.cu", tmp_path)


def _recording_tool(directory: Path, name: str, record: Path, real: str | None) -> Path:
    """An executable that appends its name to `record`, then runs the real tool (if any)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    tail = f'exec {real} "$@"\n' if real else "exit 0\n"
    path.write_text(f'#!/bin/sh\necho {name} >> {record}\n{tail}')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IROTH | stat.S_IXOTH)   # the box's user runs it
    return path


def test_the_disassembler_next_to_the_configured_nvcc_comes_before_path(tmp_path, monkeypatch):
    toolkit = tmp_path / "toolkit" / "bin"
    nvcc = _recording_tool(toolkit, "nvcc", tmp_path / "calls", None)
    _recording_tool(toolkit, "cuobjdump", tmp_path / "calls", None)
    _recording_tool(tmp_path / "elsewhere", "cuobjdump", tmp_path / "calls", None)
    monkeypatch.setenv("PATH", f"{tmp_path / 'elsewhere'}{os.pathsep}{os.environ['PATH']}")
    assert sass.find_disassembler(str(nvcc)) == toolkit / "cuobjdump"


@pytest.mark.nvcc
@needs_nvcc
def test_the_static_stage_compiles_with_the_configured_nvcc(tmp_path):
    # The compile runs boxed as another user that cannot write the record: the log shows the command.
    tmp_path.chmod(0o755)
    wrapper = _recording_tool(tmp_path / "bin", "nvcc", tmp_path / "calls", shutil.which("nvcc"))
    spec = KernelSpec(name="wmma_gemm", sources=["kernels/wmma_gemm.cu"], arch=["sm_80"])
    res = run_static(spec, SAMPLES_DIR / "wmma_gemm", tmp_path / "out", nvcc=str(wrapper))
    assert res.status is StageStatus.PASSED, res.reason
    assert f"$ {wrapper} " in res.log


@pytest.mark.nvcc
@needs_nvcc
@pytest.mark.skipif(not torch_here, reason="needs torch (the worker extra); a CPU-only build is enough for "
                                           "torch/types.h, README: torch on a CPU machine")
def test_a_cpu_gate_run_with_torch_judges_registers_spills_and_sass(tmp_path):
    """The must-show of issue 26 on a CPU machine: `gate run` of a torch-including layout gives real
    static rows (registers, spills, SASS), and the verdict stays incomplete (no GPU stage ran)."""
    repo, _ = make_repo(tmp_path, "torch_gemm")
    gate_toml = (repo / "gate.toml").read_text().replace("max_registers = 128", 'max_registers = 128\nrequire_sass = ["FFMA"]')
    (repo / "gate.toml").write_text(gate_toml)
    proc = gate_run(tmp_path, "--repo", str(repo), "--json")
    (kernel,) = json.loads(proc.stdout)["kernels"]
    static = kernel["result"]["candidate"]["static"]
    assert static["status"] == "passed", static["reason"]
    rows = {r["rule"]: r for r in kernel["rules"]}
    assert rows["max_registers"]["outcome"] == "pass" and 0 < rows["max_registers"]["value"] <= 128
    assert rows["max_spill_bytes"]["outcome"] == "pass" and rows["max_spill_bytes"]["value"] == 0
    if static["sass_available"]:
        assert rows["require_sass"]["outcome"] == "pass" and "FFMA x" in rows["require_sass"]["reason"]
    assert kernel["verdict"] == "incomplete"
