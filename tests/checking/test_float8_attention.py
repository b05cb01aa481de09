"""float8_e4m3fn attention on the CPU: e4m3 q, k, v in NaN-guarded buffers, a bfloat16 output, and the
correctness stage's verdict on right and wrong kernels (`correctness.check` with CUDA's two calls
stubbed and the inputs on the CPU). The existing dtypes still draw the values they always did, so stored
results stay comparable. Needs torch (CPU is enough); skipped without it."""

from __future__ import annotations

import re

import pytest

from gate.checking import correctness, workloads
from gate.domain import KernelSpec, Shape, StageStatus
from gate.timing.timed_checks import TimedChecks
from tests.fakes.cpu_correctness import cpu_correctness
from tests.fakes.fp8_attention import fa3_forward, float32_forward, garbage_forward, just_over_forward

torch = pytest.importorskip("torch")

E4M3 = "float8_e4m3fn"
SHAPES = [Shape({"b": 1, "h": 2, "s": 128, "d": 64}), Shape({"b": 1, "h": 2, "s": 77, "d": 128, "causal": True})]


def old_refill(inputs, seed):
    """`refill_normal` as it was before float8: every floating tensor drawn in place, in order."""
    gen = None
    for tensor in inputs.values():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            if gen is None:
                gen = torch.Generator(device=tensor.device).manual_seed(seed)
            tensor.normal_(generator=gen)


def tensors(inputs):
    return {n: t for n, t in inputs.items() if isinstance(t, torch.Tensor)}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize(("workload", "shape"), [(workloads.Attention(), SHAPES[1]),
                                                 (workloads.Gemm(), Shape({"m": 48, "n": 32, "k": 80}))])
def test_the_existing_dtypes_draw_the_values_they_always_did(workload, shape, dtype):
    inputs = workload.make_inputs(shape, dtype, 11, "cpu")
    expected = {n: torch.empty_like(t) for n, t in tensors(inputs).items()}
    for seed in (11, 12):
        if seed != 11:
            workload.refill(inputs, seed)
        old_refill(expected, seed)
        for name, tensor in expected.items():
            assert inputs[name].dtype == getattr(torch, dtype)
            assert torch.equal(inputs[name], tensor), (name, seed)


def test_e4m3_inputs_are_float32_draws_rounded_into_guarded_buffers():
    att, shape = workloads.Attention(), SHAPES[0]
    inputs = att.make_inputs(shape, E4M3, 5, "cpu")
    gen = torch.Generator().manual_seed(5)
    for name in "qkv":
        drawn = torch.empty(inputs[name].shape).normal_(generator=gen)
        assert inputs[name].dtype == torch.float8_e4m3fn
        assert torch.equal(inputs[name].float(), drawn.to(torch.float8_e4m3fn).float()), name
    assert workloads.guard_damage(inputs) == []          # the NaN canaries hold in e4m3
    before = {n: (inputs[n].data_ptr(), inputs[n].clone()) for n in "qkv"}
    att.refill(inputs, 6)
    for name, (pointer, values) in before.items():
        assert inputs[name].data_ptr() == pointer and not torch.equal(inputs[name], values)


def test_a_write_past_an_e4m3_input_hits_its_canaries():
    inputs = workloads.Attention().make_inputs(SHAPES[0], E4M3, 5, "cpu")
    k = inputs["k"]
    whole = torch.empty(0, dtype=k.dtype).set_(k.untyped_storage())
    assert bool(whole[:k.storage_offset()].isnan().all())
    whole[k.storage_offset() + k.numel()] = 0.5
    assert workloads.guard_damage(inputs) == ["k"]


@pytest.mark.parametrize("seed", range(40))
def test_perturb_one_changes_one_e4m3_element_visibly(seed):
    inputs = tensors(workloads.Attention().make_inputs(SHAPES[0], E4M3, seed, "cpu"))
    before = {n: t.float().clone() for n, t in inputs.items()}
    name, index = re.fullmatch(r"(\w)\[(\d+)\]", workloads.perturb_one(inputs, seed)).groups()
    moved = {n: (inputs[n].float() != before[n]).view(-1).nonzero().flatten().tolist() for n in inputs}
    assert moved == {n: [] for n in inputs} | {name: [int(index)]}
    assert abs(float(inputs[name].view(-1)[int(index)]) - float(before[name].view(-1)[int(index)])) >= 0.75


def test_e4m3_attention_is_referenced_upcast_and_against_bf16_sdpa():
    att, shape = workloads.Attention(), SHAPES[1]
    inputs = att.make_inputs(shape, E4M3, 3, "cpu")
    ref, lowp = att.reference(shape, inputs), att.lowp_reference(shape, inputs)
    assert ref.dtype == torch.float32 and lowp.dtype == torch.bfloat16 and ref.shape == lowp.shape
    exact = torch.nn.functional.scaled_dot_product_attention(*(inputs[n].double() for n in "qkv"), is_causal=True)
    assert (ref.double() - exact).abs().max().item() < 1e-6           # the e4m3 values themselves, upcast
    torch_err = (lowp.float() - ref).abs().max().item()
    assert 0 < torch_err < 2.0**-7 * max(1.0, ref.abs().max().item())  # bfloat16's rounding, not e4m3's
    assert att.output_dtype(E4M3) == "bfloat16" and att.output_dtype("float16") == "float16"
    assert att.peers(shape, inputs) == {}                  # SDPA has no float8 kernel: no peer to time


def test_e4m3_attention_moves_one_byte_in_and_two_out_per_element():
    att, shape = workloads.Attention(), SHAPES[0]
    elems = 1 * 2 * 128 * 64
    assert att.dram_bytes(shape, E4M3) == elems * (3 * 1 + 2)
    assert att.dram_bytes(shape, "float16") == 4.0 * elems * 2      # unchanged: in and out in the input dtype
    assert att.dram_bytes(shape, "float32") == 4.0 * elems * 4


@pytest.fixture
def judged(monkeypatch):
    """`correctness.check` of one forward over `SHAPES` in e4m3, on the CPU."""
    check = cpu_correctness(monkeypatch)
    return lambda forward, seeds=4: check(forward, SHAPES, E4M3, seeds)


@pytest.mark.parametrize("forward", [float32_forward, fa3_forward])
def test_a_right_e4m3_kernel_passes(judged, forward):
    result = judged(forward)
    assert result.status is StageStatus.PASSED, result.reason
    assert len(result.cases) == 2 * 4 and all(c.dtype == E4M3 for c in result.cases)


def test_the_epsilon_floor_carries_a_right_e4m3_kernel_past_k_times_bf16_sdpa(judged):
    """FA3's rounding of P errs several times bfloat16 SDPA's error: k x that alone would reject it."""
    result = judged(fa3_forward)
    assert result.status is StageStatus.PASSED, result.reason
    k = KernelSpec(name="fp8", sources=["k.cu"]).gates.max_error_ratio
    assert any(c.max_abs_err > k * c.torch_max_abs_err for c in result.cases)
    assert all(c.tolerance > k * c.torch_max_abs_err for c in result.cases)


@pytest.mark.parametrize("forward", [garbage_forward, just_over_forward])
def test_a_wrong_e4m3_kernel_fails_naming_the_tolerance(judged, forward):
    result = judged(forward, seeds=1)
    assert result.status is StageStatus.FAILED
    assert all(not c.passed for c in result.cases)
    found = re.fullmatch(r"2/2 cases failed; first: b1_h2_s128_d64 float8_e4m3fn seed \d+: "
                         r"max error (\S+) > float8_e4m3fn tolerance (\S+)", result.reason)
    assert found, result.reason
    max_err, tol = (float(x) for x in found.groups())
    assert max_err > tol and tol == pytest.approx(result.cases[0].tolerance, rel=1e-2)


@pytest.mark.parametrize("reference", ["reference", "lowp_reference"])
def test_timed_checks_judge_a_bf16_output_of_e4m3_inputs(reference):
    att, shape = workloads.Attention(), SHAPES[1]
    inputs = att.make_inputs(shape, E4M3, 9, "cpu")
    checks = TimedChecks(att, shape, E4M3, [inputs], correctness.DTYPE_TOLERANCE[E4M3],
                         reference=getattr(att, reference))
    right = fa3_forward(*(inputs[n] for n in "qkv"), True)
    checks.learn_output(right)
    assert checks.output_bytes == right.numel() * 2           # the bf16 output, not the e4m3 inputs
    checks.enqueue("timed call 1", right, 0)
    checks.enqueue("timed call 2", garbage_forward(*(inputs[n] for n in "qkv"), True), 0)
    checks.settle()
    assert (checks.tally.checked, checks.tally.mismatches) == (2, 1)
    assert checks.tally.named[0].startswith("timed call 2: max |out - expected|")
