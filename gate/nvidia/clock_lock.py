"""The bench's clock policy (`RunOptions.clock_policy`, setting `GATE_CLOCK_POLICY`).

`observe` (default) leaves the clocks alone; the GPU watch records them and history normalises by
them (`gate.domain.environment`). `lock` pins the SM clock through NVML at the card's default
applications clock, a level it holds under load without boosting or dropping, and resets it after.
Where locking is not permitted (it needs root or the driver's permission) the bench observes and
says so, and the job records the policy it actually ran under, never the one asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gate.domain.environment import ClockPolicy
from gate.nvidia.gpu_watch import device_handle, import_nvml, shutdown


@dataclass
class Applied:
    policy: str       # the ClockPolicy the timing ran under
    note: str         # what was done, or why a lock was not


@contextmanager
def apply(requested: str, device_index: int | None = None, nvml: Any = None) -> Iterator[Applied]:
    """Run the block under `requested` (a `ClockPolicy` value); `nvml` stands in for pynvml (tests)."""
    policy = ClockPolicy(requested)   # ValueError naming the bad value
    if policy is ClockPolicy.OBSERVE:
        yield Applied(ClockPolicy.OBSERVE.value, "clocks left alone and observed")
        return
    try:
        nvml = nvml or import_nvml()
        nvml.nvmlInit()
        handle = device_handle(nvml, device_index)
        target = int(nvml.nvmlDeviceGetDefaultApplicationsClock(handle, nvml.NVML_CLOCK_SM))
        nvml.nvmlDeviceSetGpuLockedClocks(handle, target, target)
    except Exception as exc:   # not permitted, no driver, no library: observe and say why
        if nvml is not None:
            shutdown(nvml)    # a shutdown without an init fails quietly
        yield Applied(ClockPolicy.OBSERVE.value,
                      f"clock lock asked for but not applied ({type(exc).__name__}: {exc}); clocks observed instead")
        return
    applied = Applied(ClockPolicy.LOCK.value, f"SM clock locked at {target} MHz")
    try:
        yield applied
    finally:
        try:
            nvml.nvmlDeviceResetGpuLockedClocks(handle)
        except Exception as exc:   # the lock outlives the job: say so where the job is read
            applied.note += f"; the lock was NOT reset ({exc})"
        shutdown(nvml)
