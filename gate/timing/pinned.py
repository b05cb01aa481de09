"""The timer's own references, taken before any submitted code is imported (issue 25).

A built extension runs its module initialiser inside the GPU child, the process that times it. One
that halved `torch.cuda.Event.elapsed_time` halved both sides' figures (298 vs 299 µs for a 596 µs
kernel). So `pin()` runs before the first build is loaded and keeps the C methods behind torch's events (a
built-in type's attributes cannot be reassigned; the Python wrappers can), and `tampered()` names what
was replaced since (docs/threat-model.md, "a module initialiser that patches the timer").
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

# The gate's modules whose functions the timing path calls: a replaced function there is tampering.
# The baseline's side host is reached through `remote_side` and `side_wire` (issue 26).
WATCHED_MODULES = ("gate.timing.bench", "gate.timing.gpu_timing", "gate.timing.all_streams",
                   "gate.timing.timing_methods", "gate.timing.timed_checks",
                   "gate.timing.stats", "gate.timing.pinned", "gate.timing.gpu_hold",
                   "gate.timing.remote_side", "gate.timing.side_wire")
# The public Python entry points a patcher reaches for: the gate does not call them, it checks them.
WATCHED_TORCH = ("torch.cuda.Event.elapsed_time", "torch.cuda.Event.record", "torch.cuda.Event.synchronize",
                 "torch.cuda.synchronize", "torch.cuda.CUDAGraph.replay", "time.perf_counter",
                 "torch._C._cuda_synchronize")


@dataclass
class _Pins:
    perf_counter: Any
    event_type: Any              # torch.cuda.Event, to construct events
    record: Any                  # _CudaEventBase.record(event, stream)
    elapsed_time: Any            # _CudaEventBase.elapsed_time(start, end) -> ms
    event_synchronize: Any
    device_synchronize: Any      # torch._C._cuda_synchronize
    current_stream: Any          # torch.cuda.current_stream
    watched: dict[str, Any] = field(default_factory=dict)   # dotted name -> object at pin time


_PINS: _Pins | None = None


def _resolve(dotted: str) -> Any:
    """The object at `a.b.c`: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        module = sys.modules.get(name)
        if module is None:
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
        obj = module
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot resolve {dotted}")


def _module_functions() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in WATCHED_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if callable(value) and not attr.startswith("__"):
                found[f"{name}.{attr}"] = value
    return found


def pin() -> None:
    """Take the references (idempotent: the first call's stay). Call before importing submitted code."""
    global _PINS
    if _PINS is not None:
        return
    import time

    import torch

    # The C type when this torch has it (every 2.x does); else the Python class, still as it is now.
    base = getattr(torch._C, "_CudaEventBase", torch.cuda.Event)
    watched = {}
    for name in WATCHED_TORCH:
        try:
            watched[name] = _resolve(name)
        except (ImportError, AttributeError):   # not in this torch: nothing there to patch either
            continue
    watched.update(_module_functions())
    _PINS = _Pins(time.perf_counter, torch.cuda.Event, base.record, base.elapsed_time, base.synchronize,
                  getattr(torch._C, "_cuda_synchronize", torch.cuda.synchronize), torch.cuda.current_stream,
                  watched)


def _pins() -> _Pins:
    if _PINS is None:
        pin()
    assert _PINS is not None
    return _PINS


def now() -> float:
    """`time.perf_counter()` as it was at pin time."""
    return _pins().perf_counter()


def new_event() -> Any:
    return _pins().event_type(enable_timing=True)


def record(event: Any) -> None:
    """Record `event` on the caller's current stream, through the C method."""
    p = _pins()
    p.record(event, p.current_stream())


def elapsed_ms(start: Any, end: Any) -> float:
    return _pins().elapsed_time(start, end)


def wait(event: Any) -> None:
    _pins().event_synchronize(event)


def synchronize() -> None:
    """`cudaDeviceSynchronize`: every stream of the device."""
    _pins().device_synchronize()


def tampered() -> list[str]:
    """Every watched name whose object is no longer the one pinned ([] before `pin`)."""
    if _PINS is None:
        return []
    changed = []
    for name, obj in _PINS.watched.items():
        try:
            now_obj = _resolve(name)
        except (ImportError, AttributeError):
            changed.append(f"{name} (removed)")
            continue
        if now_obj is not obj:
            changed.append(name)
    return changed


def reset_for_tests() -> None:
    """Forget the pins (tests that pin against a fake torch)."""
    global _PINS
    _PINS = None
