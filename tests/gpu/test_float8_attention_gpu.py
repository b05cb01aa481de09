"""float8_e4m3fn attention's inputs and checks on a CUDA device, where torch's float8 support differs
from the CPU's (the NaN canaries, the perturbed element read back with `.item()`, `torch.equal`, SDPA's
refusal, bf16 SDPA as PyTorch's side, the bit-for-bit comparison of a stale output). The kernels are the
Python fakes of tests/fakes/fp8_attention.py, one behind the checksum cache of tests/fakes/caching.py;
tests/checking/test_float8_attention.py and test_stale_output.py check the same on the CPU."""

import pytest

from gate.domain import KernelSpec, Shape, StageStatus
from tests.fakes.caching import ChecksumCached
from tests.fakes.fp8_attention import fa3_forward, garbage_forward

pytestmark = pytest.mark.gpu

E4M3 = "float8_e4m3fn"
SHAPES = [Shape({"b": 2, "h": 4, "s": 1024, "d": 128}), Shape({"b": 1, "h": 8, "s": 333, "d": 64, "causal": True})]


def judge(forward):
    from types import SimpleNamespace

    from gate.checking import correctness, workloads

    kernel = KernelSpec(name="fp8", sources=["k.cu"], shapes=SHAPES, dtypes=[E4M3])
    return correctness.check(kernel, SimpleNamespace(forward=forward), workloads.Attention(), seeds=4)


def test_a_right_e4m3_kernel_passes_on_the_device(torch):
    result = judge(fa3_forward)
    assert result.status is StageStatus.PASSED, result.reason
    assert len(result.cases) == 8


def test_a_wrong_e4m3_kernel_fails_on_the_device_naming_the_tolerance(torch):
    result = judge(garbage_forward)
    assert result.status is StageStatus.FAILED
    assert "float8_e4m3fn tolerance" in result.cases[0].reason, result.reason


def test_a_checksum_cache_fails_on_the_device_as_a_stale_output(torch):
    """At S=1024 one changed e4m3 element moves the answer by less than the tolerance: the cached output
    fails as unchanged on both one-element cases, and computes afresh after each refill."""
    result = judge(ChecksumCached(fa3_forward))
    assert result.status is StageStatus.FAILED
    long = [c for c in result.cases if c.shape == SHAPES[0].label]
    assert [c.passed for c in long] == [True, False, True, False], result.reason
    for case in long[1::2]:
        assert case.reason.startswith("returned the previous case's output unchanged although input "), case.reason


def test_e4m3_inputs_keep_their_canaries_and_find_no_sdpa_peer_on_the_device(torch):
    from gate.checking import workloads

    att, shape = workloads.Attention(), SHAPES[1]
    inputs = att.make_inputs(shape, E4M3, 1, "cuda")
    assert inputs["q"].dtype == torch.float8_e4m3fn and workloads.guard_damage(inputs) == []
    assert att.lowp_reference(shape, inputs).dtype == torch.bfloat16
    assert att.peers(shape, inputs) == {}
    k = inputs["k"]
    whole = torch.empty(0, dtype=k.dtype, device=k.device).set_(k.untyped_storage())
    whole[k.storage_offset() - 1] = 0.5
    assert workloads.guard_damage(inputs) == ["k"]
