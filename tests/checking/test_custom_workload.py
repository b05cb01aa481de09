"""A `module:callable` workload as docs/manifest.md ("A custom workload") describes it: the
documented example loads and keeps the protocol, and `get_workload` refuses, as a `ManifestError`
naming the key, a module it cannot use and every shape the workload's `check_shape` refuses.
No torch here: a workload module imports torch inside its methods."""

import importlib.util
import sys
from pathlib import Path

import pytest

from gate.checking.workloads import REQUIRED_METHODS, get_workload, guard_damage, perturb_one
from gate.domain import KernelSpec, Shape
from gate.errors import ManifestError
from gate.manifest.load import load_manifest
from tests.manifest.test_readme_manifest import examples, write_example

DOC = "docs/manifest.md"
MODULE = "bench/attn_bshd.py"


def documented_repo(tmp_path: Path) -> Path:
    """The docs' custom-workload gate.toml and its module, written as a repository."""
    (where, text), = [(w, t) for w, t in examples() if w.startswith(DOC) and "bench.attn_bshd:make" in t]
    write_example(tmp_path, where, text)
    return tmp_path


def test_the_documented_example_loads_and_keeps_the_protocol(tmp_path):
    torch_before = "torch" in sys.modules
    repo = documented_repo(tmp_path)
    assert (repo / MODULE).read_text().startswith("# bench/attn_bshd.py\n")   # the documented file
    (kernel,) = load_manifest(repo).kernels
    workload = get_workload(kernel, repo)                  # checks every declared shape
    assert ("torch" in sys.modules) == torch_before        # loading it imported no torch
    for method in (*REQUIRED_METHODS, "check_shape", "flops", "dram_bytes", "peers"):
        assert callable(getattr(workload, method)), method
    assert [workload.check_shape(s) for s in kernel.shapes] == [None, None]
    assert workload.flops(kernel.shapes[0]) == 4.0 * 4 * 8 * 1024 ** 2 * 64


@pytest.mark.parametrize(("params", "words"), [
    ({"b": 1, "s": 4096, "h": 16, "d": 96}, "d = 96: the kernel is built for d = 64 or 128"),
    ({"b": 1, "s": 4096, "d": 64}, "missing h"),
    ({"b": 1, "s": 4096, "h": 16, "d": 64, "window": 256}, "unknown key window"),
    ({"b": 1, "s": 4096, "h": 16, "d": 64, "causal": 1}, "causal = 1: expected true or false"),
])
def test_the_documented_example_refuses_a_shape_it_cannot_feed(tmp_path, params, words):
    repo = documented_repo(tmp_path)
    (kernel,) = load_manifest(repo).kernels
    problem = get_workload(kernel, repo).check_shape(Shape(params))
    assert problem is not None and words in problem
    kernel.shapes.append(Shape(params))
    with pytest.raises(ManifestError) as info:
        get_workload(kernel, repo)
    assert info.value.key == "kernel['attn_bshd'].shapes[2]"
    assert words in str(info.value) and "(checked by bench.attn_bshd:make)" in str(info.value)


WORKLOAD = '''
class Rows:
    def check_shape(self, shape):
        n = shape.params.get("n")
        return None if isinstance(n, int) and n % 128 == 0 else f"n = {n}: a multiple of 128"

    def make_inputs(self, shape, dtype, seed, device): ...
    def refill(self, inputs, seed): ...
    def call(self, module, function_name, inputs): ...
    def reference(self, shape, inputs): ...
    def lowp_reference(self, shape, inputs): ...


class NoReference:
    def make_inputs(self, shape, dtype, seed, device): ...
    def refill(self, inputs, seed): ...
    def call(self, module, function_name, inputs): ...


def make():
    return Rows()


def incomplete():
    return NoReference()
'''


def spec(workload: str, *sizes: int) -> KernelSpec:
    return KernelSpec(name="rows", sources=["k.cu"], workload=workload, shapes=[Shape({"n": n}) for n in sizes])


def test_the_first_refused_shape_is_named_by_index_and_as_the_manifest_writes_it(tmp_path):
    (tmp_path / "wl.py").write_text(WORKLOAD)
    assert type(get_workload(spec("wl:make", 128, 4096), tmp_path)).__name__ == "Rows"
    with pytest.raises(ManifestError) as info:
        get_workload(spec("wl:make", 128, 1000, 3), tmp_path)
    assert str(info.value) == ("gate.toml: kernel['rows'].shapes[1]: {n = 1000}: n = 1000: a multiple of 128 "
                               "(checked by wl:make)")


def test_a_workload_without_the_required_methods_is_refused_naming_them(tmp_path):
    (tmp_path / "wl.py").write_text(WORKLOAD)
    with pytest.raises(ManifestError) as info:
        get_workload(spec("wl:incomplete", 128), tmp_path)
    assert info.value.key == "kernel['rows'].workload"
    assert "the NoReference it returns has no reference, lowp_reference" in str(info.value)


def test_a_package_workload_loads_as_the_manifest_accepts_it(tmp_path):
    (tmp_path / "bench" / "wl").mkdir(parents=True)
    (tmp_path / "bench" / "wl" / "__init__.py").write_text(WORKLOAD)
    assert type(get_workload(spec("bench.wl:make", 256), tmp_path)).__name__ == "Rows"


def test_a_module_linked_from_outside_the_repository_is_refused_when_the_manifest_is_read(tmp_path):
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir(), repo.mkdir()
    (outside / "wl.py").write_text(WORKLOAD)
    (repo / "wl.py").symlink_to(outside / "wl.py")
    (repo / "k.cu").write_text("__global__ void k() {}\n")
    (repo / "gate.toml").write_text('[[kernel]]\nname = "rows"\nsources = ["k.cu"]\nworkload = "wl:make"\n'
                                    'shapes = [{n = 128}]\n')
    with pytest.raises(ManifestError, match="kernel\\[0\\].workload: module 'wl' not found in the repository"):
        load_manifest(repo)
    with pytest.raises(ManifestError, match="module 'wl' is not a file inside the repository"):
        get_workload(spec("wl:make", 128), repo)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (CPU is enough)")
def test_the_documented_example_computes_attention_in_its_own_layout(tmp_path):
    import torch

    repo = documented_repo(tmp_path)
    (kernel,) = load_manifest(repo).kernels
    workload = get_workload(kernel, repo)
    shape = Shape({"b": 2, "s": 64, "h": 4, "d": 64, "causal": True})
    inputs = workload.make_inputs(shape, "float32", 7, "cpu")
    assert inputs["q"].shape == (2, 64, 256) and inputs["n_heads"] == 4 and inputs["causal"] is True
    q, k, v = (inputs[n].double().view(2, 64, 4, 64) for n in "qkv")        # [b, s, h, d]
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / 8.0
    scores.masked_fill_(torch.ones(64, 64, dtype=torch.bool).triu(1), float("-inf"))
    expected = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(2, 64, 256)
    ref = workload.reference(shape, inputs)
    assert ref.shape == (2, 64, 256) and torch.allclose(ref.double(), expected, atol=1e-6)
    lowp = workload.lowp_reference(shape, inputs)
    assert lowp.shape == ref.shape and torch.allclose(lowp.double(), expected, atol=1e-4)
    before = inputs["q"].clone()
    workload.refill(inputs, 8)
    assert not torch.equal(before, inputs["q"])
    assert perturb_one(inputs, 9)[0] in "qkv" and guard_damage(inputs) == []   # what correctness does
