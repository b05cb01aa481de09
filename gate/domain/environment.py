"""What makes two timings comparable across jobs: the environment key, and cycle-normalised figures.

Interleaving makes one job's comparison fair; history compares figures of *different* jobs, and a
microsecond means the same from job to job only on the same GPU model, under the same driver, with
the same clock policy. Those three make the environment key stored with every figure
(`storage/recording.py`); the kernel page draws and searches change points per key.

Within one key the SM clock can still differ between jobs (GPU Boost under `observe`): where the GPU
watch saw the clock, the latency is also stored in kilocycles (µs x MHz / 1000), which does not move
with the clock, and change points use that series when the clocks of a key's jobs differ.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ClockPolicy(StrEnum):
    """What the bench does with the GPU's clocks (setting `GATE_CLOCK_POLICY`)."""

    OBSERVE = "observe"   # leave the clocks alone, watch them, normalise figures by the SM clock seen
    LOCK = "lock"         # lock the SM clock through NVML where permitted, else observe (and say so)


UNKNOWN = ""   # no GPU seen, or a figure stored before environments were recorded (migration 0003)


def describe(key: str) -> str:
    """How a page names an environment key."""
    return key or "unknown environment"


def environment_key(gpu_name: str, driver: str, clock_policy: str) -> str:
    """One string naming the environment: `NVIDIA H200 | driver 570.86 | clocks observe`."""
    if not gpu_name:
        return UNKNOWN
    return f"{gpu_name} | driver {driver or '?'} | clocks {clock_policy or ClockPolicy.OBSERVE.value}"


def stored_environment(fingerprint: dict[str, Any] | None, bench: dict[str, Any] | None) -> str:
    """The key of a stored job, from its fingerprint JSON and its bench stage's JSON payload."""
    fp = fingerprint or {}
    policy = (bench or {}).get("clock_policy") or ClockPolicy.OBSERVE.value
    return environment_key(fp.get("gpu_name", ""), fp.get("driver", ""), policy)


def kilocycles(us: float, sm_clock_mhz: float) -> float:
    """A time in µs as thousands of SM cycles at `sm_clock_mhz` (µs x MHz = cycles)."""
    if sm_clock_mhz <= 0:
        raise ValueError(f"SM clock must be positive, got {sm_clock_mhz} MHz")
    return us * sm_clock_mhz / 1000.0
