"""A CPU-only `gate run` of a torch-including layout gives real static verdicts (issue 26): where
torch is installed, the static stage compiles a `.cu` that includes torch's CUDA headers against
torch's own include paths, without a GPU, and the rule table holds registers, spills and SASS.

Marked `gpu` only so that it runs where torch is (the device check); the child sees no GPU
(`CUDA_VISIBLE_DEVICES=""`), as on a CPU CI machine with torch installed."""

import json
import subprocess
import sys

import pytest

from tests.gate_env import gate_env
from tests.samples.build import commit_files, make_repo

pytestmark = pytest.mark.gpu


def test_a_cpu_only_gate_run_reports_registers_spills_and_sass(tmp_path):
    pytest.importorskip("torch")
    repo, _ = make_repo(tmp_path, "torch_gemm")
    source = (repo / "gemm.cu").read_text()
    # The layout most foreign kernels have: the stream from ATen's CUDA headers (absent from a CPU-only
    # torch build, present in the default Linux wheel).
    commit_files(repo, {"gemm.cu": source.replace("#include <torch/types.h>\n",
                                                  "#include <torch/types.h>\n#include <ATen/cuda/CUDAContext.h>\n")},
                 "include ATen's CUDA context")
    env = {**gate_env(GATE_DATA_DIR=str(tmp_path / "data")), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), "--json"],
                          capture_output=True, text=True, env=env, timeout=900)
    doc = json.loads(proc.stdout)
    (kernel,) = doc["kernels"]
    static = kernel["result"]["candidate"]["static"]
    assert static["status"] == "passed", static["reason"]
    (fn,) = static["functions"]
    assert fn["registers"] > 0 and fn["spill_store_bytes"] == 0 and fn["sass_opcodes"].get("FFMA", 0) > 0
    rules = {r["rule"]: r for r in kernel["rules"]}
    assert rules["max_registers"]["outcome"] == "pass" and rules["max_spill_bytes"]["outcome"] == "pass"
    assert kernel["verdict"] == "incomplete"            # the GPU stages could not run: never accept
