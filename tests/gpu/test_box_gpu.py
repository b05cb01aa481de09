"""Issue 24 on the GPU: the narrower box (only the system, toolchain, Python and the gate's package),
its memory cgroup and the return path still let a real job run every stage and keep its .ncu-rep."""

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from gate import box
from gate.domain import KernelSpec
from gate.domain.job import Checkout, JobRequest
from gate.executors.child import run_child
from tests.gate_env import gate_env
from tests.samples.build import make_repo

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


def test_cuda_and_torch_work_in_the_gpu_box_and_private_files_stay_out(tmp_path):
    """The driver's libraries, /dev/nvidia*, torch and its CUDA libraries are in the view; a canary
    next to the gate's checkout and one under /var are not."""
    tag = uuid.uuid4().hex[:8]
    canaries = [ROOT / f".env-canary-{tag}", Path(f"/var/tmp-canary-{tag}")]
    for path in canaries:
        path.write_text("secret")
    (tmp_path / "checkout").mkdir()
    request = JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]),
                         candidate=Checkout("c" * 40, str(tmp_path / "checkout")), artifacts_dir=str(tmp_path / "art"))
    script = textwrap.dedent(f"""
        import json, os, sys, torch
        a = torch.randn(256, 256, device="cuda")
        seen = {{"cuda": torch.cuda.is_available(), "sum": float((a @ a).sum().isfinite()),
                "canaries": [os.path.exists(p) for p in {[str(p) for p in canaries]!r}]}}
        json.dump({{"kernel": "k", "candidate": {{"sha": "c"}}, "notes": [json.dumps(seen)]}}, open("result.json", "w"))
    """)
    try:
        result = run_child(request, 300, None, command=[sys.executable, "-c", script])
    finally:
        for path in canaries:
            path.unlink(missing_ok=True)
    print(result.notes)
    seen = json.loads(result.notes[-1])
    assert seen == {"cuda": True, "sum": 1.0, "canaries": [False, False]}
    assert result.notes[0].startswith("box limits: memory: ")
    if box.memory_cap(box.Box(limits=box.GPU_CHILD_LIMITS)).folder is not None:
        assert "cgroup" in result.notes[0]


def test_gate_run_keeps_the_ncu_report_through_the_return_path_and_removes_its_folders(tmp_path):
    repo, shas = make_repo(tmp_path / "sample", variants=[])
    data_dir = tmp_path / "data"
    env = gate_env(GATE_DATA_DIR=str(data_dir), GATE_BENCH_BUDGET_S="3")
    proc = subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), "--sha", shas["base"],
                           "--base", shas["base"], "--json"], capture_output=True, text=True, env=env, timeout=900)
    print(proc.stderr[-4000:])
    (kernel,) = json.loads(proc.stdout)["kernels"]
    assert kernel["verdict"] == "accept", kernel["reason"]
    kinds = {a["kind"]: Path(a["path"]) for a in kernel["artifacts"]}
    assert "ncu_report" in kinds and kinds["ncu_report"].stat().st_size > 0
    assert all(p.is_relative_to(data_dir / "artifacts") and not p.is_symlink() for p in kinds.values())
    notes = kernel["result"]["notes"]
    assert notes[0].startswith("box limits: memory: ") and not [n for n in notes if "refused" in n]
    assert not list((data_dir / "box").glob("*")) and not list((data_dir / "workspaces").glob("*"))
    assert os.environ.get("GATE_BOX") == "off" or "box" in proc.stderr    # the box event is on the live log
