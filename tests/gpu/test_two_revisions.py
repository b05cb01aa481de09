"""Two revisions of one kernel (same module name, same kernel symbol) loaded into one process must
each run their own code: the bench times candidate against baseline inside one process. (pybind11 3
caches modules by import name; found on the device when a +12 % variant timed at ratio 1.000.)"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

SUBJECT = Path(__file__).resolve().parents[2] / "bench" / "quality_repo"

PROGRAM = r"""
import sys
from pathlib import Path
import torch
from gate.compiling import build
from gate.domain import Gates, KernelSpec, Shape

spec = KernelSpec(name="fma_chain", sources=["kernels/fma_chain.cu", "extension/fma_binding.cpp"],
                  workload="gemm", arch=["sm_90"], shapes=[Shape({"n": 1024, "iters": 4})],
                  dtypes=["float32"], gates=Gates())
outs = []
for rev in sys.argv[1:3]:
    res = build.build_extension(spec, Path(rev), Path(sys.argv[3]), Path(rev) / "_build")
    assert res.status.value == "passed", res.log
    module = build.load_module(res.module_path)
    x = torch.zeros(1024, device="cuda")
    outs.append(module.forward(x, 4).cpu())
print("difference", float((outs[1] - outs[0]).mean()))
"""


def _revision(tmp_path: Path, name: str, offset: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(SUBJECT, dest)
    cu = dest / "kernels" / "fma_chain.cu"
    cu.write_text(cu.read_text().replace("y[i] = v;", f"y[i] = v + {offset};"))
    return dest


def test_each_loaded_revision_runs_its_own_kernel(tmp_path):
    pytest.importorskip("torch")
    base, cand = _revision(tmp_path, "base", "0.0f"), _revision(tmp_path, "cand", "1.0f")
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(base), str(cand), str(tmp_path / "cache")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    difference = float(out.stdout.split("difference")[-1])
    assert difference == pytest.approx(1.0), "the second revision ran the first one's kernel"
