"""The GPU stages on a real device: build cache, correctness verdicts, interleaved bench, fingerprint."""

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from gate.domain import Gates, KernelSpec, Shape, StageStatus
from gate.domain.job import RunOptions

pytestmark = pytest.mark.gpu

SUBJECT = Path(__file__).resolve().parents[2] / "bench" / "quality_repo"
SHAPE = Shape({"n": 100_003, "iters": 64})   # odd size: a masked tail



@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("objcache")


def spec(**kw) -> KernelSpec:
    return KernelSpec(name="fma_chain", sources=["kernels/fma_chain.cu", "extension/fma_binding.cpp"],
                      workload="quality_workload:make", arch=["sm_90"], shapes=[SHAPE], dtypes=["float32"],
                      gates=Gates(max_latency_regression_pct=1.0, max_error_ratio=16.0), **kw)


def checkout(tmp_path: Path, edit=None) -> Path:
    dest = tmp_path / "repo"
    shutil.copytree(SUBJECT, dest)
    if edit:
        cu = dest / "kernels" / "fma_chain.cu"
        cu.write_text(edit(cu.read_text()))
    return dest


def build_and_load(tmp_path, cache, edit=None):
    from gate.compiling import build

    src = checkout(tmp_path, edit)
    res = build.build_extension(spec(), src, cache, tmp_path / "out")
    return src, res, (build.load_module(res.module_path) if res.status is StageStatus.PASSED else None)


def test_correct_kernel_builds_and_passes_correctness(torch, cache, tmp_path):
    from gate.checking import correctness, workloads

    src, res, module = build_and_load(tmp_path, cache)
    assert res.status is StageStatus.PASSED, res.log
    assert "Used" in res.log and "registers" in res.log          # ptxas -v figures are reported
    result = correctness.check(spec(), module, workloads.get_workload(spec(), src), seeds=3)
    assert result.status is StageStatus.PASSED, result.reason
    assert len(result.cases) == 3 and all(c.max_abs_err is not None for c in result.cases)
    assert len({c.seed for c in result.cases}) == 3


def test_kernel_only_change_hits_the_cache_for_the_binding(torch, cache, tmp_path):
    build_and_load(tmp_path / "a", cache)
    _, res, _ = build_and_load(tmp_path / "b", cache, lambda s: s.replace("0.999f, 0.001f);\n  float d",
                                                                          "0.999f, 0.001f); // edited\n  float d"))
    assert res.status is StageStatus.PASSED, res.log
    assert (res.cache_hits, res.cache_misses) == (1, 1)


def test_unwritten_element_fails_correctness(torch, cache, tmp_path):
    from gate.checking import correctness, workloads

    src, res, module = build_and_load(tmp_path, cache,
                                      lambda s: s.replace("if (i >= n) return;", "if (i >= n || i == 7) return;"))
    result = correctness.check(spec(), module, workloads.get_workload(spec(), src), seeds=2)
    assert result.status is StageStatus.FAILED
    assert "NaN" in result.cases[0].reason


def test_compile_error_is_a_failed_build_with_the_log(torch, cache, tmp_path):
    _, res, _ = build_and_load(tmp_path, cache, lambda s: s.replace("float v = x[i];", "float v = x[i] + nope;"))
    assert res.status is StageStatus.FAILED
    assert "nope" in res.log and "fma_chain.cu" in res.reason


def test_bench_of_two_builds_of_one_source_reports_a_ratio_near_one(torch, cache, tmp_path):
    from gate.checking import workloads
    from gate.timing import bench

    src, _, a = build_and_load(tmp_path / "a", cache)
    _, _, b = build_and_load(tmp_path / "b", cache)
    res = bench.time_revisions(spec(), workloads.get_workload(spec(), src), a, b,
                               RunOptions(bench_budget_s=2.0, max_reruns=0))
    assert res.status is StageStatus.PASSED, res.reason
    s = res.shapes[0]
    assert s.ratio_ci_low <= s.ratio <= s.ratio_ci_high
    assert 0.97 < s.ratio < 1.03
    assert len(s.candidate.samples_us) == len(s.baseline.samples_us) == s.rounds >= 32


def test_attention_workload_passes_sdpa_itself_and_finds_peers(torch):
    import torch.nn.functional as F

    from gate.checking import correctness, workloads

    k = KernelSpec(name="sdpa", sources=[], workload="attention", shapes=[
        Shape({"b": 1, "h": 3, "s": 17, "d": 64, "causal": True}), Shape({"b": 2, "h": 8, "s": 512, "d": 64})])
    wl = workloads.get_workload(k, Path("."))
    module = SimpleNamespace(forward=lambda q, kk, v, c: F.scaled_dot_product_attention(q, kk, v, is_causal=c))
    result = correctness.check(k, module, wl, seeds=2)
    assert result.status is StageStatus.PASSED, result.reason
    peers = wl.peers(k.shapes[1], wl.make_inputs(k.shapes[1], "float16", 0, "cuda"))
    assert "sdpa_flash" in peers


def test_gemm_workload_rejects_a_transposed_product(torch):
    from gate.checking import correctness, workloads

    k = KernelSpec(name="mm", sources=[], workload="gemm", shapes=[Shape({"m": 256, "n": 256, "k": 128})])
    wl = workloads.get_workload(k, Path("."))
    good = SimpleNamespace(forward=lambda a, b: a @ b.T)
    wrong = SimpleNamespace(forward=lambda a, b: (a @ b.T).T.contiguous())
    assert correctness.check(k, good, wl, seeds=2).status is StageStatus.PASSED
    assert correctness.check(k, wrong, wl, seeds=2).status is StageStatus.FAILED


def test_work_on_another_stream_is_caught(torch):
    from gate.checking import correctness, workloads

    k = KernelSpec(name="mm", sources=[], workload="gemm", shapes=[Shape({"m": 2048, "n": 2048, "k": 2048})])
    wl = workloads.get_workload(k, Path("."))
    side = torch.cuda.Stream()

    def forward(a, b):
        out = torch.empty(a.shape[0], b.shape[0], dtype=a.dtype, device=a.device)
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)      # the result lands long after the caller's stream is done
            torch.matmul(a, b.T, out=out)
        return out

    result = correctness.check(k, SimpleNamespace(forward=forward), wl, seeds=1)
    torch.cuda.synchronize()
    assert result.status is StageStatus.FAILED


def test_fingerprint_names_the_gpu(torch):
    from gate.nvidia import fingerprint

    fp = fingerprint.collect()
    assert fp.gpu_name and fp.compute_capability and fp.sm_count and fp.torch
