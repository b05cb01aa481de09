"""A standard PyTorch custom-op layout on the device (issue 26): a hand-written `PyInit__C`, an op
registered with `TORCH_LIBRARY` and reached through `torch.ops`, writing into an output argument and
returning None. The module name is found, the op runs, an unwritten block fails correctness; and two
builds of one op namespace are gated against each other, the baseline in a side host of its own:
A/A is accepted with both sides timed, a variant that launches its kernel 8 times per call is
rejected by `max_latency_regression_pct` (which it could not be if both sides ran one build)."""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gate.domain import Gates, KernelSpec, Shape, StageStatus
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.domain.verdict import Verdict
from gate.timing.bench import ISOLATED_NOTE

pytestmark = pytest.mark.gpu

KERNEL = r"""
#include <Python.h>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void add_into_kernel(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;   // GUARD
  out[i] = a[i] + b[i];
}

void add_into(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  TORCH_CHECK(a.is_cuda() && a.is_contiguous() && a.scalar_type() == at::kFloat, "a: contiguous float32 CUDA");
  int64_t n = a.numel();
  int blocks = (int)((n + 255) / 256);
  add_into_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
}

extern "C" {
// The layout of PyTorch's extension-cpp tutorial: an empty module whose import runs the static
// initialisers below, which register the op. PyMODINIT_FUNC exports the symbol: extensions are
// compiled with hidden visibility, so a plain `PyObject* PyInit__C` is not found by the import (seen
// on the device: "dynamic module does not define module export function").
PyMODINIT_FUNC PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
  return PyModule_Create(&module_def);
}
}

TORCH_LIBRARY(gate_probe, m) { m.def("add_into(Tensor a, Tensor b, Tensor(a!) out) -> ()"); }
TORCH_LIBRARY_IMPL(gate_probe, CUDA, m) { m.impl("add_into", &add_into); }
"""

WORKLOAD = '''
from gate.checking.workloads import dtype_bytes, guarded_empty, refill_normal, torch_op


class AddInto:
    outputs = ("out",)                 # written by the op, which returns None

    def make_inputs(self, shape, dtype, seed, device):
        n = shape.params["n"]
        inputs = {name: guarded_empty((n,), dtype, device) for name in ("a", "b", "out")}
        refill_normal(inputs, seed)
        return inputs

    refill = staticmethod(refill_normal)

    def call(self, module, function_name, inputs):
        torch_op("gate_probe::add_into")(inputs["a"], inputs["b"], inputs["out"])
        return inputs["out"]

    def reference(self, shape, inputs):
        return inputs["a"].double() + inputs["b"].double()

    def lowp_reference(self, shape, inputs):
        return inputs["a"] + inputs["b"]

    def dram_bytes(self, shape, dtype):
        return 3 * shape.params["n"] * dtype_bytes(dtype)


def make():
    return AddInto()
'''

SHAPE = Shape({"n": 100_003, "scale": 1.0, "layout": "flat"})


def spec() -> KernelSpec:
    return KernelSpec(name="add_into", sources=["csrc/ops.cu"], workload="wl:make", arch=["sm_90"],
                      shapes=[SHAPE], dtypes=["float32"], profile=False, gates=Gates(max_error_ratio=16.0))


def repo(root: Path, guard: str = "if (i >= n) return;", launches: int = 1) -> Path:
    """The sample in `root`; `launches`: kernel launches per call of the op (same result, more work)."""
    (root / "csrc").mkdir(parents=True)
    kernel = KERNEL.replace("if (i >= n) return;", guard)
    if launches > 1:
        kernel = kernel.replace("  add_into_kernel<<<", f"  for (int r = 0; r < {launches}; ++r) add_into_kernel<<<")
    (root / "csrc" / "ops.cu").write_text(kernel)
    (root / "wl.py").write_text(WORKLOAD)
    return root



def test_pyinit_c_is_found_and_the_out_argument_op_passes_then_fails_unwritten(torch, tmp_path):
    """One process per case: a second `TORCH_LIBRARY(gate_probe)` in this process would abort it."""
    import subprocess
    import sys

    program = r'''
import sys
from pathlib import Path
from gate.checking import correctness, workloads
from gate.compiling import build, objects
sys.path.insert(0, sys.argv[3])
from test_foreign_protocol import spec
src = Path(sys.argv[1])
assert objects.extension_name(spec(), src) == "_C"
res = build.build_extension(spec(), src, Path(sys.argv[2]), src / "_build")
assert res.status.value == "passed", res.log
assert res.module_path.endswith("/_C.so"), res.module_path
module = build.load_module(res.module_path)
result = correctness.check(spec(), module, workloads.get_workload(spec(), src), seeds=3)
print("STATUS", result.status.value, result.reason)
'''
    here = str(Path(__file__).parent)
    outcomes = {}
    for name, guard in (("good", "if (i >= n) return;"),
                        ("unwritten", "if (i >= n || blockIdx.x == gridDim.x - 1) return;")):
        src = repo(tmp_path / name, guard)
        run = subprocess.run([sys.executable, "-c", program, str(src), str(tmp_path / "cache"), here],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        outcomes[name] = run.stdout.split("STATUS", 1)[1].strip()
    assert outcomes["good"].startswith("passed"), outcomes
    assert outcomes["unwritten"].startswith("failed"), outcomes
    assert "NaN/Inf elements" in outcomes["unwritten"]


def _gate_two_builds(tmp_path, candidate_launches: int):
    """A job through the GPU child's entry point (`run_child`), then `decide`: the candidate launches
    its kernel `candidate_launches` times per call, the baseline once; both register `gate_probe`."""
    from gate.executors.child import run_child
    from gate.verdict.decide import decide

    cand = repo(tmp_path / "cand", launches=candidate_launches)
    base = repo(tmp_path / "base")
    kernel = replace(spec(), gates=Gates(max_error_ratio=16.0, max_latency_regression_pct=10.0))
    request = JobRequest(kernel=kernel, candidate=Checkout("c" * 40, str(cand)),
                         baseline=Checkout("b" * 40, str(base)), artifacts_dir=str(tmp_path / "art"),
                         options=RunOptions(profile=False, bench_budget_s=2.0, max_reruns=1,
                                            build_cache_dir=str(tmp_path / "objects")))
    result = run_child(request, 900)
    report = decide(result, kernel.gates)
    print(f"\n{candidate_launches} launch(es): {report.verdict.value}: {report.reason}; bench: "
          f"{result.bench.reason if result.bench else None}")
    assert result.candidate.build.status is StageStatus.PASSED, result.candidate.build.reason
    assert result.baseline.build.status is StageStatus.PASSED, result.baseline.build.reason
    assert (tmp_path / "art" / "baseline" / "build" / "side-host.log").is_file()
    assert result.bench.status is StageStatus.PASSED, result.bench.reason
    assert ISOLATED_NOTE in result.bench.reason           # the evidence names the side host
    timing = result.bench.shapes[0]
    assert timing.candidate.samples_us and timing.baseline is not None and timing.baseline.samples_us
    return result, report, timing


def test_two_builds_of_one_op_namespace_a_a_is_accepted_with_both_sides_timed(torch, tmp_path):
    """Issue 26: the second `TORCH_LIBRARY(gate_probe)` used to abort the child at the baseline's
    import; in its own process it loads, and the same sources on both sides read alike."""
    _, report, timing = _gate_two_builds(tmp_path, candidate_launches=1)
    assert report.verdict is Verdict.ACCEPT, report.reason
    assert 0.9 < timing.ratio < 1.1, timing.ratio


def test_each_process_runs_its_own_build_of_the_op(torch, tmp_path):
    """The candidate's op launches its kernel 8 times, the baseline's once: were `torch.ops.gate_probe`
    one build for both, they would read alike and pass; each process runs its own, so it is rejected."""
    _, report, timing = _gate_two_builds(tmp_path, candidate_launches=8)
    assert report.verdict is Verdict.REJECT, report.reason
    assert "max_latency_regression_pct" in report.reason, report.reason
    assert timing.ratio > 2.0, timing.ratio


class _TorchModule:
    """A stand-in extension whose functions write into `out` and return None, like a kernel's binding."""

    @staticmethod
    def add_into(a, b, out):
        import torch
        torch.add(a, b, out=out)

    @staticmethod
    def add_into_but_last(a, b, out):
        import torch
        torch.add(a[:-1], b[:-1], out=out[:-1])     # leaves the last element as it found it


class _ReturnsNone:
    """The out-argument workload of the docs, with `call` forgetting to return the output."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def call(self, module, function_name, inputs):
        getattr(module, function_name)(inputs["a"], inputs["b"], inputs["out"])


def _out_workload(tmp_path):
    from gate.checking import workloads

    src = repo(tmp_path)
    kernel = KernelSpec(name="add_into", sources=["csrc/ops.cu"], workload="wl:make", function="add_into",
                        shapes=[SHAPE], dtypes=["float32"], gates=Gates(max_error_ratio=16.0))
    return kernel, workloads.get_workload(kernel, src)


def _direct_call(workload):
    """The workload of `WORKLOAD`, calling the module's function instead of the registered op."""
    class Direct(type(workload)):
        def call(self, module, function_name, inputs):
            getattr(module, function_name)(inputs["a"], inputs["b"], inputs["out"])
            return inputs["out"]
    return Direct()


def test_an_out_argument_is_checked_not_counted_as_a_changed_input(torch, tmp_path):
    from gate.checking import correctness

    kernel, workload = _out_workload(tmp_path)
    result = correctness.check(kernel, _TorchModule, _direct_call(workload), seeds=3)
    assert result.status is StageStatus.PASSED, result.reason


def test_an_element_the_kernel_leaves_in_the_out_argument_reads_nan(torch, tmp_path):
    from dataclasses import replace

    from gate.checking import correctness

    kernel, workload = _out_workload(tmp_path)
    result = correctness.check(replace(kernel, function="add_into_but_last"), _TorchModule,
                               _direct_call(workload), seeds=2)
    assert result.status is StageStatus.FAILED
    assert "1 NaN/Inf elements in the poisoned output block" in result.cases[0].reason


def test_a_call_that_returns_none_says_to_return_the_out_argument(torch, tmp_path):
    from gate.checking import correctness

    kernel, workload = _out_workload(tmp_path)
    result = correctness.check(kernel, _TorchModule, _ReturnsNone(_direct_call(workload)), seeds=1)
    assert result.status is StageStatus.FAILED
    assert "returned NoneType, not a tensor (for a function that writes into an output argument" in \
        result.cases[0].reason


def test_outputs_naming_an_input_make_inputs_lacks_is_an_error_not_a_reject(torch, tmp_path):
    from gate.checking import correctness
    from gate.errors import ManifestError

    kernel, workload = _out_workload(tmp_path)
    direct = _direct_call(workload)
    type(direct).outputs = ("result",)
    with pytest.raises(ManifestError, match="outputs names result, which make_inputs did not return"):
        correctness.check(kernel, _TorchModule, direct, seeds=1)
