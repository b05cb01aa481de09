"""Correctness stage: the kernel against a float32/float64 reference on fresh random inputs.

Per shape x dtype x seed, inputs live in the *same* buffers (NaN canaries): the first case fills them,
odd cases change one element (a checksum cache fails), even cases refill everything (a pointer cache
fails). The output is poisoned before the call and copied on the caller's stream before any host
synchronisation: that copy is judged, so work left elsewhere cannot pass by luck (docs/threat-model.md).

A case passes iff

    max|out - ref| <= dtype tolerance x max(1, max|ref|)                         (absolute sanity)
    max|out - ref| <= max(k x max|torch_lowp - ref|, floor)                       (FlashAttention's rule)

with k = `gates.max_error_ratio` and floor = the dtype's epsilon x max(1, max|ref|), so that k x a tiny
PyTorch error does not demand more than the format holds. For float8_e4m3fn, PyTorch's side is
bfloat16 SDPA; the floor (2**-3) lies above the dtype tolerance, so the absolute bound alone judges.

A stale output is judged by itself, not by its error (docs/threat-model.md says why): a case fails
when its copy is bit for bit the previous case's while the reference, rounded to the output's dtype,
moved in at least `STALE_MIN_MOVED_ELEMS` elements; after type, shape, inputs, canaries, a late write
and NaN/Inf, before the error bounds. It does not see an output from further back or nudged by one
element, nor a change that reaches few outputs: the error bounds judge those; a cache used only while
timed is the bench's rotating input sets' to defeat (`bench.INPUT_SETS`).

A CUDA fault leaves the CUDA context unusable: the stage ends at once, FAILED, its `reason` starting
with `CUDA_FAULT_PREFIX`; the caller must run no further GPU stage in this process.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

from gate.checking.workloads import guard_damage, perturb_one, poison_outputs, read_only
from gate.domain import CorrectnessCase, CorrectnessResult, KernelSpec, Shape, StageStatus
from gate.errors import GateError

CUDA_FAULT_PREFIX = "CUDA fault"
_STICKY_ERRORS = ("illegal memory access", "misaligned address", "unspecified launch failure",
                  "illegal instruction", "device-side assert", "hardware stack error")

# Absolute tolerance per dtype, scaled by max(1, max|ref|). Generous on purpose: the k x PyTorch rule
# is the sharp one; these catch a kernel that is wrong where PyTorch is itself imprecise.
# float8_e4m3fn (attention: e4m3 q, k, v, bf16 out): a CPU emulation of FlashAttention-3's FP8 forward,
# P rounded to e4m3 before P·V, against float64 on the same e4m3 values erred by at most 0.021 x
# max(1, max|ref|) over S 17..2048, causal or not, D 64/128; 5e-2 leaves a margin of ~2.4x.
DTYPE_TOLERANCE = {"float16": 2e-2, "bfloat16": 6e-2, "float32": 1e-4, "float8_e4m3fn": 5e-2}
# How long a case waits for late writers (a detached host thread, an unjoined stream) before it
# compares the output with the copy taken at return: the deferred launch came ~300 µs late.
LATE_WRITE_WAIT_S = 0.005
# Machine epsilon (unit roundoff x 2) of each format: the floor of the k x PyTorch rule. e4m3 has 3
# mantissa bits: 2**-3, above its tolerance, so k x bfloat16 SDPA's small error never rejects a correct
# e4m3 kernel and the tolerance alone decides.
DTYPE_EPSILON = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float8_e4m3fn": 2.0**-3}
# A case's output is stale when it is bit for bit the previous case's while the reference, rounded to
# the output's dtype, changed in at least this many elements. Why a count: an honest kernel is off the
# exact answer by its own error, so where the exact answer moved by less than one ulp of the output,
# the reference's rounding may cross a boundary while the kernel's stays put: one element, or a few,
# prove nothing. Where it moved by an ulp or more, a kernel that computes from its inputs moves too
# (every interval of one ulp holds a rounding boundary). Worst case for an honest kernel: every move is
# under an ulp and its value's place within the ulp is independent of the reference's. Then each
# element crosses for the kernel as often as for the reference, both counts are Poisson of one mean,
# and the chance that the reference crosses in 32 or more elements while the kernel crosses in none is
# at most 3e-11 per case (at the worst mean, 16); for a kernel that sees only half of each move, 4e-7.
# Measured on the CPU (the fakes of tests/fakes/fp8_attention.py, float32 and float16 SDPA; e4m3,
# float16, bfloat16; S 77..1024; 60 one-element changes each): honest kernels changed in at least 55 %
# as many elements as the rounded reference, never in none; the reference changed in fewer than 32
# elements only at S=77 causal (15 % of its changes: v in the last rows), where the error bounds alone
# judge the case.
STALE_MIN_MOVED_ELEMS = 32
STALE_PREFIX = "returned the previous case's output unchanged"


def is_cuda_fault(exc: BaseException) -> bool:
    """True for the "sticky" CUDA errors after which the context is unusable (CUDA Runtime API,
    cudaError_t: illegal address, misaligned address, launch failure, illegal instruction, assert)."""
    text = str(exc).lower()
    return any(s in text for s in _STICKY_ERRORS)


@dataclass(frozen=True)
class _Judged:
    """What the next case's staleness check keeps of a judged case: no more than these two tensors."""

    out: Any                      # the judged copy of the output
    ref_rounded: Any              # the reference rounded to the output's dtype


def check(kernel: KernelSpec, module: Any, workload: Any, seeds: int) -> CorrectnessResult:
    """Every shape x dtype of `kernel` on `seeds` fresh random inputs each."""
    import torch

    start = time.perf_counter()
    if not torch.cuda.is_available():
        return CorrectnessResult(StageStatus.NOT_RUN, "not run: no CUDA device")
    cases: list[CorrectnessCase] = []
    for shape in kernel.shapes:
        for dtype in kernel.dtypes:
            base_seed = secrets.randbits(31)   # fresh per check; recorded per case to reproduce
            inputs = None
            previous: _Judged | None = None
            for i in range(seeds):
                seed = base_seed + i
                try:
                    note = ""
                    if inputs is None:
                        inputs = workload.make_inputs(shape, dtype, seed, "cuda")
                        change = ""
                    elif i % 2 == 1:
                        changed = perturb_one(read_only(workload, inputs), seed)   # never an output argument
                        note = f" (inputs differ from the previous case only in {changed})"
                        change = f"input {changed} changed"
                    else:
                        workload.refill(inputs, seed)
                        change = "every input was refilled"
                    case, previous = _one_case(kernel, module, workload, shape, dtype, seed, inputs,
                                               previous, change)
                    if not case.passed and not case.reason.startswith(STALE_PREFIX):   # it names the change
                        case.reason += note
                except GateError:        # the workload breaks the protocol (`outputs`): error, not reject
                    raise
                except Exception as exc:  # noqa: BLE001  the kernel's exception is evidence, not a crash
                    previous = None
                    fault = is_cuda_fault(exc)
                    reason = f"{CUDA_FAULT_PREFIX}: {exc}" if fault else f"raised {type(exc).__name__}: {exc}"
                    cases.append(CorrectnessCase(shape.label, dtype, seed, False, reason=reason[:2000]))
                    if fault:
                        return CorrectnessResult(StageStatus.FAILED, reason[:500],
                                                 time.perf_counter() - start, cases)
                    continue
                cases.append(case)
    failed = [c for c in cases if not c.passed]
    duration = time.perf_counter() - start
    if failed:
        first = failed[0]
        return CorrectnessResult(StageStatus.FAILED, f"{len(failed)}/{len(cases)} cases failed; "
                                 f"first: {first.shape} {first.dtype} seed {first.seed}: {first.reason}",
                                 duration, cases)
    return CorrectnessResult(StageStatus.PASSED, f"{len(cases)} cases passed", duration, cases)


def _one_case(kernel: KernelSpec, module: Any, workload: Any, shape: Shape, dtype: str, seed: int,
              inputs: dict[str, Any], previous: _Judged | None,
              change: str) -> tuple[CorrectnessCase, _Judged | None]:
    """One call judged, and what the next case compares with (None when no output was judged);
    `change`: how the inputs differ from the `previous` case's."""
    import torch

    ref = workload.reference(shape, inputs).float()
    lowp = workload.lowp_reference(shape, inputs)
    torch_err = float((lowp.float() - ref).abs().max())
    snapshot = {n: t.clone() for n, t in read_only(workload, inputs).items() if isinstance(t, torch.Tensor)}
    call = _call(kernel, module, workload, inputs, lowp)

    def case(passed: bool, reason: str = "", max_err: float | None = None,
             mean_err: float | None = None, tol: float | None = None) -> CorrectnessCase:
        return CorrectnessCase(shape.label, dtype, seed, passed, max_err, mean_err, torch_err, tol, reason)

    if broken := _broken(call, ref, snapshot, inputs):
        return case(False, broken), None
    out = call.held
    judged = _Judged(out, ref.to(out.dtype) if out.is_floating_point() else ref.round().to(out.dtype))
    err = (out.float() - ref).abs()
    max_err, mean_err = float(err.max()), float(err.mean())
    tol, rule = _tolerance(kernel, workload, dtype, ref, torch_err)
    stale = _stale_reason(previous, judged, change)
    if stale:
        return case(False, stale, max_err, mean_err, tol), judged
    if max_err > tol:
        return case(False, f"max error {max_err:.3g} > {rule}", max_err, mean_err, tol), judged
    return case(True, "", max_err, mean_err, tol), judged


@dataclass(frozen=True)
class _Call:
    out: Any                      # what the call returned
    held: Any                     # its copy on the caller's stream at return (None: not a tensor)
    poison_ptr: int               # the NaN block freed right before the call


def _call(kernel: KernelSpec, module: Any, workload: Any, inputs: dict[str, Any], lowp: Any) -> _Call:
    """The output poisoned, the call, its copy before any host synchronisation, a wait for late writers."""
    import torch

    poison_outputs(workload, inputs)            # an output argument: unwritten elements read NaN
    torch.cuda.synchronize()                    # nothing of the previous case is still running
    poison = torch.full(lowp.shape, float("nan"), dtype=lowp.dtype, device=lowp.device)
    poison_ptr = poison.data_ptr()
    del poison                                  # freed: the next same-sized allocation reuses it
    out = workload.call(module, kernel.function, inputs)
    held = out.clone() if isinstance(out, torch.Tensor) else None   # on the caller's stream, no sync
    time.sleep(LATE_WRITE_WAIT_S)
    torch.cuda.synchronize()                    # every stream: late writers have landed by now
    return _Call(out, held, poison_ptr)


def _broken(call: _Call, ref: Any, snapshot: dict[str, Any], inputs: dict[str, Any]) -> str:
    """Why the call's output cannot be judged by its error at all ("" when it can)."""
    import torch

    out, held = call.out, call.held
    if not isinstance(out, torch.Tensor) or held is None:
        hint = " (for a function that writes into an output argument, `call` returns that tensor)" \
            if out is None else ""
        return f"returned {type(out).__name__}, not a tensor{hint}"
    if tuple(out.shape) != tuple(ref.shape):
        return f"output shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    changed = [n for n, t in snapshot.items() if not torch.equal(t, inputs[n])]
    if changed:
        return f"inputs modified: {', '.join(changed)}"
    damaged = guard_damage(inputs)
    if damaged:
        return f"wrote out of bounds: the canaries around {', '.join(damaged)} changed"
    late = int(((held != out) & ~(held.isnan() & out.isnan())).sum())
    if late:
        return (f"{late} output elements written after the call returned (work left on "
                f"another stream or thread, not ordered on the caller's stream)")
    bad = int((~torch.isfinite(held)).sum())
    if bad:
        where = "the poisoned output block" if held.data_ptr() == call.poison_ptr else "the output"
        return f"{bad} NaN/Inf elements in {where} (unwritten elements?)"
    return ""


def _tolerance(kernel: KernelSpec, workload: Any, dtype: str, ref: Any, torch_err: float) -> tuple[float, str]:
    """A case's bound on the max error (the smaller of the module docstring's two), and its rule in words."""
    scale = max(1.0, float(ref.abs().max()))
    # A workload may widen the table for its own numerics (e.g. long float32 recurrences).
    tolerances = {**DTYPE_TOLERANCE, **getattr(workload, "dtype_tolerance", {})}
    dtype_tol = tolerances.get(dtype, 1e-2) * scale
    ratio_tol = max(kernel.gates.max_error_ratio * torch_err, DTYPE_EPSILON.get(dtype, 1e-3) * scale)
    tol = min(dtype_tol, ratio_tol)
    rule = f"{kernel.gates.max_error_ratio:g} x PyTorch's {torch_err:.3g}" if tol == ratio_tol \
        else f"{dtype} tolerance {dtype_tol:.3g}"
    return tol, rule


def _stale_reason(previous: _Judged | None, now: _Judged, change: str) -> str:
    """Why `now` is the previous case's output kept, or "" (see `STALE_MIN_MOVED_ELEMS`)."""
    import torch

    if previous is None or previous.out.dtype != now.out.dtype or \
            not torch.equal(_bits(previous.out), _bits(now.out)):
        return ""
    moved = int((_bits(previous.ref_rounded) != _bits(now.ref_rounded)).sum())
    if moved < STALE_MIN_MOVED_ELEMS:
        return ""
    one_element = change.startswith("input ")
    cache = "a checksum of the inputs or their pointers" if one_element else "the inputs' pointers"
    dtype = str(now.out.dtype).removeprefix("torch.")
    return (f"{STALE_PREFIX} although {change} and the reference rounded to {dtype} moved in {moved} "
            f"elements: a result cached by {cache}?")


def _bits(t: Any) -> Any:
    """A floating tensor's bits as integers of its width (-0.0 is not 0.0, a NaN equals itself)."""
    import torch

    widths = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return t.view(widths[t.element_size()]) if t.is_floating_point() else t
