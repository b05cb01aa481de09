"""The reuse key changes exactly when something a measurement depends on changes (docs/reuse.md)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gate.domain import Gates, KernelSpec
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.executors import reuse_key as rk

SPEC = KernelSpec(name="k", sources=["k.cu"], workload="gemm", nvcc_flags=["-Icsrc"])


def _tree(root: Path, **files: str) -> Path:
    base = {"k.cu": '#include "tile.cuh"\n__global__ void k() {}\n', "csrc/tile.cuh": "#define T 16\n",
            "other.cuh": "#define O 1\n", "wl.py": "def make(): ...\n"}
    for name, text in {**base, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _key(root: Path, spec: KernelSpec = SPEC, baseline: Path | None = None, env: str = "gpu",
         **fields: object) -> str:
    fields = {"artifacts_dir": "anywhere", **fields}
    request = JobRequest(kernel=spec, candidate=Checkout("c" * 40, str(root)),
                         baseline=Checkout("b" * 40, str(baseline)) if baseline else None, **fields)
    return rk.job_keys(request, env).job


def test_a_header_found_through_an_include_flag_is_part_of_the_key(tmp_path):
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b", **{"csrc/tile.cuh": "#define T 32\n"})
    assert _key(a) != _key(b)


def test_a_header_a_binding_finds_through_a_cxx_include_flag_is_part_of_the_key(tmp_path):
    # The binding compiles with cxx_flags: a header it finds only through their -I folder is read by
    # the build, so a change to it must measure again (the key once followed nvcc_flags' folders alone).
    spec = dataclasses.replace(SPEC, sources=["k.cu", "bind.cpp"], nvcc_flags=[], cxx_flags=["-Iinclude"])
    files = {"bind.cpp": '#include "ops.h"\nint bind;\n', "include/ops.h": "#define OPS 1\n"}
    a = _tree(tmp_path / "a", **files)
    b = _tree(tmp_path / "b", **{**files, "include/ops.h": "#define OPS 2\n"})
    assert _key(a, spec) != _key(b, spec)


def test_a_file_the_kernel_does_not_include_is_not(tmp_path):
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b", **{"other.cuh": "#define O 2\n", "README.md": "x"})
    assert _key(a) == _key(b)


def test_gates_are_not_part_of_the_key_but_flags_and_shapes_are(tmp_path):
    tree = _tree(tmp_path / "a")
    assert _key(tree) == _key(tree, dataclasses.replace(SPEC, gates=Gates(max_registers=64)))
    assert _key(tree) != _key(tree, dataclasses.replace(SPEC, nvcc_flags=["-Icsrc", "-O2"]))
    assert _key(tree) != _key(tree, dataclasses.replace(SPEC, dtypes=["bfloat16"]))


def test_what_else_the_child_is_told_is_part_of_the_key_but_paths_and_shas_are_not(tmp_path):
    tree = _tree(tmp_path / "a")
    assert _key(tree) != _key(tree, profile_baseline=True)
    moved = _tree(tmp_path / "elsewhere")
    assert _key(tree) == _key(moved) == _key(tree, artifacts_dir="other", options=RunOptions(bench_budget_s=1))


def test_a_repository_workload_makes_its_python_part_of_the_key(tmp_path):
    custom = dataclasses.replace(SPEC, workload="wl:make")
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b", **{"wl.py": "def make(): return 1\n"})
    assert _key(a, custom) != _key(b, custom)
    assert _key(a) == _key(b)                       # a built-in workload reads no repository Python


def test_the_baseline_side_and_the_environment_are_part_of_the_key(tmp_path):
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b", **{"k.cu": "__global__ void k() { }\n"})
    assert len({_key(a), _key(a, baseline=a), _key(a, baseline=b), _key(a, env="other gpu")}) == 4


def test_without_a_gpu_there_is_no_key(tmp_path, monkeypatch):
    assert _key(_tree(tmp_path / "a"), env="") == ""
    monkeypatch.setattr(rk, "visible_gpus", lambda gpu=None: "")
    assert rk.environment_inputs(RunOptions()) == ""


def test_measuring_options_enter_the_environment_and_paths_do_not(monkeypatch):
    monkeypatch.setattr(rk, "visible_gpus", lambda gpu=None: "NVIDIA H200, 570.86")
    base = rk.environment_inputs(RunOptions())
    assert rk.environment_inputs(RunOptions(bench_budget_s=3.0)) != base
    assert rk.environment_inputs(RunOptions(build_cache_dir="/elsewhere", stage_timeout_s=1.0)) == base


def test_a_tool_is_asked_its_version_once_until_it_is_replaced(tmp_path, monkeypatch):
    tool = tmp_path / "fake-nvcc"
    calls = tmp_path / "calls"
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'release 13.0'\n")
    tool.chmod(0o755)
    assert rk.tool_version(str(tool)) == rk.tool_version(str(tool)) == "release 13.0"
    assert calls.read_text().count("x") == 1
    tool.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'release 13.1, a longer line'\n")
    assert rk.tool_version(str(tool)) == "release 13.1, a longer line"
    assert rk.tool_version("no-such-tool-here") == ""


def test_a_side_key_names_one_sides_inputs_wherever_that_side_stands(tmp_path):
    a, b = _tree(tmp_path / "a"), _tree(tmp_path / "b", **{"csrc/tile.cuh": "#define T 32\n"})
    assert rk.side_key(SPEC, a, "gpu") == rk.side_key(SPEC, _tree(tmp_path / "a2"), "gpu")   # paths aside
    assert rk.side_key(SPEC, a, "gpu") != rk.side_key(SPEC, b, "gpu")
    gated = dataclasses.replace(SPEC, gates=Gates(max_registers=64))
    assert rk.side_key(SPEC, a, "gpu") == rk.side_key(gated, a, "gpu")
    assert rk.side_key(SPEC, a, "gpu") != rk.side_key(dataclasses.replace(SPEC, dtypes=["bfloat16"]), a, "gpu")
    assert rk.side_key(SPEC, a, "gpu") != rk.side_key(SPEC, a, "another gpu")
    assert rk.side_key(SPEC, a, "") == ""                           # no GPU seen: nothing is offered
    # The pair's key is made of both sides: (a, b) is not (b, a), and changing either side changes it.
    assert _key(a, baseline=b) != _key(b, baseline=a) != _key(a, baseline=a)


def test_the_baseline_side_key_carries_the_baselines_own_flags(tmp_path):
    cand, base = _tree(tmp_path / "c"), _tree(tmp_path / "b")
    own = dataclasses.replace(SPEC, nvcc_flags=["-Icsrc", "--maxrregcount=24"])

    def keys(baseline_kernel: KernelSpec | None):  # noqa: ANN202
        request = JobRequest(kernel=SPEC, candidate=Checkout("c" * 40, str(cand)),
                             baseline=Checkout("b" * 40, str(base)), artifacts_dir="x",
                             baseline_kernel=baseline_kernel)
        return rk.job_keys(request, "gpu")

    same, flagged = keys(None), keys(own)
    assert same.candidate == flagged.candidate and same.baseline != flagged.baseline and same.job != flagged.job
    # a candidate key stands for a later baseline built the same way (its profile may be reused)
    later = JobRequest(kernel=own, candidate=Checkout("c" * 40, str(base)), artifacts_dir="y")
    assert rk.job_keys(later, "gpu").candidate == flagged.baseline
