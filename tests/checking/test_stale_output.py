"""The correctness stage catches a result kept from the previous case by design, at every dtype: a kernel
whose output is bit for bit the previous case's while the reference moved fails with a reason naming
the change, even where the stale output lies inside the tolerance (e4m3 and float16 attention at
S=1024). `correctness.check` runs on the CPU with CUDA's two calls stubbed (tests/fakes/cpu_correctness.py), as in
test_float8_attention.py. Needs torch (CPU is enough); skipped without it."""

from __future__ import annotations

import re

import pytest

from gate.checking import correctness, workloads
from gate.domain import Shape, StageStatus
from tests.fakes.caching import ChecksumCached
from tests.fakes.cpu_correctness import OnCpu, cpu_correctness
from tests.fakes.fp8_attention import fa3_forward, float32_forward

torch = pytest.importorskip("torch")

E4M3 = "float8_e4m3fn"
LONG = Shape({"b": 1, "h": 2, "s": 1024, "d": 64})
LONG_CAUSAL = Shape({"b": 1, "h": 2, "s": 1024, "d": 64, "causal": True})
SHORT_CAUSAL = Shape({"b": 1, "h": 2, "s": 77, "d": 128, "causal": True})
SHORT = Shape({"b": 2, "h": 1, "s": 128, "d": 64})
STALE = re.compile(r"returned the previous case's output unchanged although input ([a-z]+)\[(\d+)\] changed and "
                   r"the reference rounded to (\w+) moved in (\d+) elements: a result cached by a checksum of "
                   r"the inputs or their pointers\?")


def sdpa_float32(q, k, v, causal):
    """Attention in float32 from the inputs' values, rounded once into the inputs' dtype."""
    qf, kf, vf = (t.float() for t in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal).to(q.dtype)


@pytest.fixture
def judged(monkeypatch):
    """`correctness.check` of one forward on the CPU; `base_seed` fixes the stage's random draw."""
    return cpu_correctness(monkeypatch)


def perturbed_by(shape, dtype, base_seed):
    """The element the stage changes in case 1 of `base_seed`, drawn as `check` draws it."""
    inputs = OnCpu().make_inputs(shape, dtype, base_seed, "cpu")
    return workloads.perturb_one(workloads.read_only(OnCpu(), inputs), base_seed + 1)


@pytest.mark.parametrize(("dtype", "shape", "forward", "base_seed"), [
    (E4M3, LONG, fa3_forward, 0), (E4M3, LONG, fa3_forward, 1000), (E4M3, LONG, float32_forward, 2000),
    ("float16", LONG_CAUSAL, sdpa_float32, 109)])
def test_a_checksum_cache_is_rejected_where_its_stale_output_is_within_tolerance(judged, dtype, shape, forward,
                                                                                   base_seed):
    """Before the staleness check these passed correctness: the one changed element moved the exact answer
    by less than the tolerance (e4m3 at S=1024 almost always, float16 at base seed 109: k in a last row)."""
    cheat = ChecksumCached(forward)
    result = judged(cheat, [shape], dtype, seeds=2, base_seed=base_seed)
    assert cheat.hits == 1
    assert result.status is StageStatus.FAILED
    first, stale = result.cases
    assert first.passed and not stale.passed
    assert stale.max_abs_err <= stale.tolerance           # the error bounds alone would pass it
    found = STALE.fullmatch(stale.reason)
    assert found, stale.reason
    assert f"{found[1]}[{found[2]}]" == perturbed_by(shape, dtype, base_seed)   # names the changed input
    assert found[3] == ("bfloat16" if dtype == E4M3 else dtype)
    assert int(found[4]) >= correctness.STALE_MIN_MOVED_ELEMS
    assert result.reason.endswith(stale.reason)


@pytest.mark.parametrize("dtype", [E4M3, "float16", "bfloat16", "float32"])
def test_a_checksum_cache_fails_naming_the_change_at_every_dtype(judged, dtype):
    """Also where the stale output lies outside the tolerance: the reason says what happened."""
    forward = fa3_forward if dtype == E4M3 else sdpa_float32
    result = judged(ChecksumCached(forward), [LONG, SHORT], dtype, seeds=3, base_seed=7)
    assert result.status is StageStatus.FAILED
    assert [c.passed for c in result.cases] == [True, False, True] * 2   # a refill is a new checksum
    assert all(STALE.fullmatch(c.reason) for c in result.cases[1::3]), result.reason


def test_a_checksum_cache_is_rejected_on_a_gemm(judged):
    class GemmOnCpu(workloads.Gemm):
        def make_inputs(self, shape, dtype, seed, device):
            return super().make_inputs(shape, dtype, seed, "cpu")

    def forward(a, b):
        return (a.float() @ b.float().T).to(a.dtype)

    result = judged(ChecksumCached(forward), [Shape({"m": 96, "n": 64, "k": 80})], "float16", seeds=2,
                    workload=GemmOnCpu())
    assert result.status is StageStatus.FAILED
    assert re.fullmatch(r"returned the previous case's output unchanged although input [ab]\[\d+\] changed and the "
                        r"reference rounded to float16 moved in \d+ elements: .*", result.cases[1].reason)


@pytest.mark.parametrize(("dtype", "forward"), [(E4M3, float32_forward), (E4M3, fa3_forward),
                                                ("float16", sdpa_float32), ("bfloat16", sdpa_float32)])
def test_an_honest_kernel_passes_every_case(judged, dtype, forward):
    result = judged(forward, [LONG_CAUSAL, SHORT_CAUSAL, SHORT], dtype, seeds=16)
    assert result.status is StageStatus.PASSED, result.reason
    assert len(result.cases) == 48


class Previous:
    """Computes honestly, except on the calls in `stale_calls` (counted from 1): there it returns the output
    of the call before, untouched, or, with `scribble`, after writing into its k."""

    def __init__(self, forward, stale_calls, scribble=False):
        self.forward, self.stale_calls, self.scribble = forward, stale_calls, scribble
        self.calls, self.last = 0, None

    def __call__(self, q, k, v, causal):
        self.calls += 1
        if self.calls in self.stale_calls:
            if self.scribble:
                k.view(-1)[0] = 0.5
            return self.last.clone()
        self.last = self.forward(q, k, v, causal)
        return self.last


def test_a_kernel_that_caches_some_of_the_time_fails_where_it_does(judged):
    """A refilled case too: its output kept for the same pointers fails naming the refill."""
    result = judged(Previous(fa3_forward, stale_calls={3}), [LONG], E4M3, seeds=4)
    assert [c.passed for c in result.cases] == [True, True, False, True]
    assert re.fullmatch(r"returned the previous case's output unchanged although every input was refilled and the "
                        r"reference rounded to bfloat16 moved in \d+ elements: a result cached by the inputs' "
                        r"pointers\?", result.cases[2].reason), result.cases[2].reason


def test_modified_inputs_keep_their_reason_before_a_stale_output(judged):
    result = judged(Previous(fa3_forward, stale_calls={2}, scribble=True), [LONG], E4M3, seeds=2)
    assert result.cases[1].reason.startswith("inputs modified: k"), result.cases[1].reason


class SumEverywhere:
    """A custom workload: x `[n]` in, `[n]` out, the first `m` elements sum(x), the rest 0 (its `m`
    elements move when one x does, so `m` sets how many move)."""

    def __init__(self, m):
        self.m = m

    def make_inputs(self, shape, dtype, seed, device):
        inputs = {"x": torch.empty(int(shape.params["n"]), dtype=getattr(torch, dtype))}
        workloads.refill_normal(inputs, seed)
        return inputs

    refill = staticmethod(workloads.refill_normal)

    def call(self, module, function_name, inputs):
        return getattr(module, function_name)(inputs["x"])

    def reference(self, shape, inputs):
        out = torch.zeros(inputs["x"].shape, dtype=torch.float64)
        out[:self.m] = inputs["x"].double().sum()
        return out

    def lowp_reference(self, shape, inputs):
        return self.reference(shape, inputs).to(inputs["x"].dtype)


@pytest.mark.parametrize(("moved", "stale"), [(correctness.STALE_MIN_MOVED_ELEMS - 1, False),
                                              (correctness.STALE_MIN_MOVED_ELEMS, True)])
def test_a_custom_workloads_stale_output_is_judged_by_the_count_of_moved_elements(judged, moved, stale):
    workload = SumEverywhere(moved)
    first = {}

    def forward(x):
        first.setdefault("out", workload.reference(None, {"x": x}).to(x.dtype))
        return first["out"].clone()

    result = judged(forward, [Shape({"n": 256})], "float32", seeds=2, workload=workload)
    assert result.cases[0].passed and not result.cases[1].passed
    reason = result.cases[1].reason
    if stale:
        assert re.fullmatch(rf"returned the previous .* input x\[\d+\] changed and the reference rounded to float32 "
                            rf"moved in {moved} elements: .*", reason), reason
    else:   # too few elements to tell it from an honest kernel's rounding: the error bound decides
        assert reason.startswith("max error "), reason


def test_an_honest_kernel_of_a_custom_workload_passes(judged):
    workload = SumEverywhere(64)
    result = judged(lambda x: workload.reference(None, {"x": x}).to(x.dtype), [Shape({"n": 256})], "float32",
                    seeds=6, workload=workload)
    assert result.status is StageStatus.PASSED, result.reason
