"""Watch the GPU while the bench times: clocks, clock-event (throttle) reasons, temperature, power,
and other processes on the device, sampled through NVML (nvidia-ml-py) in a background thread.

    with watch_gpu(device_index) as watch:     # samples every `interval_s`
        ...timing...
    watch.result -> GpuWatch                    # summary + `problems` in words

Sharing, and thermal or hardware slowdowns, are `problems` (docs/design.md, "The GPU watched"). GPU
Boost's own regulation is not: both sides are timed interleaved within milliseconds while Boost moves
over hundreds (on an H100, unchanged kernels under a 3-4.5 % moving clock read -0.4 to +0.4 %). Idle
samples are not counted: idle clocks drop by design. Without NVML the watch only says why.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from gate.domain.results import GpuWatch

INTERVAL_S = 0.1
IDLE_PROBE_S, IDLE_CONFIRM_S = 0.3, 1.0   # NVML's utilisation covers the last 1/6 s to 1 s
BUSY_WHILE_IDLE_PCT = 10
CLOCK_SPREAD_PCT = 2.0     # GPU Boost moves the SM clock in ~15 MHz steps; 2 % of ~1980 MHz is 40 MHz
# NVML's clock-event reasons (nvml.h, `nvmlClocksEventReason*`) that slow a kernel down. GpuIdle,
# ApplicationsClocksSetting, SyncBoost and DisplayClockSetting are settings or states, not throttling.
THROTTLE_REASONS = {0x4: "software power cap", 0x8: "hardware slowdown", 0x20: "software thermal slowdown",
                    0x40: "hardware thermal slowdown", 0x80: "hardware power brake"}
IDLE_REASON = 0x1
# Throttling that forbids a latency verdict; the software power cap is GPU Boost's ordinary regulation.
HARD_THROTTLE = 0x8 | 0x20 | 0x40 | 0x80


@dataclass
class Sample:
    sm_clock_mhz: int
    mem_clock_mhz: int
    temperature_c: int
    power_w: float
    reasons: int                       # bit mask of nvmlClocksEventReason*
    processes: dict[int, int] = field(default_factory=dict)   # pid -> used GPU memory, bytes


def summarise(samples: list[Sample], own_pids: set[int], interval_s: float = INTERVAL_S,
              busy_while_idle_pct: list[int] | None = None) -> GpuWatch:
    """The `GpuWatch` of the samples and idle probes: ranges over the busy samples, and the problems."""
    busy = [s for s in samples if not s.reasons & IDLE_REASON] or samples
    watch = GpuWatch(available=True, samples=len(samples), interval_ms=interval_s * 1000,
                     busy_while_idle_pct=list(busy_while_idle_pct or []))
    if not busy:
        watch.problems.append("no NVML sample was taken while timing")
        return watch
    sm = [s.sm_clock_mhz for s in busy]
    mem = [s.mem_clock_mhz for s in busy]
    watch.sm_clock_mhz_min, watch.sm_clock_mhz_max = min(sm), max(sm)
    watch.sm_clock_mhz_median = float(statistics.median(sm))
    watch.mem_clock_mhz_min, watch.mem_clock_mhz_max = min(mem), max(mem)
    watch.temperature_c_max = max(s.temperature_c for s in busy)
    watch.power_w_max = round(max(s.power_w for s in busy), 1)
    others: dict[int, int] = {}
    for s in samples:
        for pid, used in s.processes.items():
            if pid not in own_pids:
                others[pid] = max(others.get(pid, 0), used)
    watch.other_processes = [f"pid {pid}: {used // 2**20} MiB" for pid, used in sorted(others.items())]
    # The cause first: the throttling a stranger's load brings is its symptom.
    if others:
        watch.problems.append(f"the GPU was shared while timing ({', '.join(watch.other_processes)})")
    elif any(pct >= BUSY_WHILE_IDLE_PCT for pct in watch.busy_while_idle_pct):
        watch.problems.append(f"the GPU was shared while timing (busy {max(watch.busy_while_idle_pct)} % "
                              "while this job was idle; NVML names no process here)")
    shared = bool(watch.problems)
    spreads = [CLOCK_SPREAD_PCT]
    for label, low, high in (("SM", min(sm), max(sm)), ("memory", min(mem), max(mem))):
        spread = (high - low) / high * 100 if high else 0.0
        spreads.append(spread)
        if spread > CLOCK_SPREAD_PCT:
            watch.problems.append(f"{label} clock moved {low}..{high} MHz while timing")
    seen = 0
    for s in busy:
        seen |= s.reasons
    watch.clock_events = [name for bit, name in THROTTLE_REASONS.items() if seen & bit]
    if watch.clock_events:
        watch.problems.append(f"clocks throttled while timing: {', '.join(watch.clock_events)}")
    if watch.problems and not shared and not seen & HARD_THROTTLE:
        watch.boost_spread_pct = round(max(spreads), 2)
    return watch


def busy_while_idle(nvml: Any, handle: Any, settle: Callable[[], None],
                    sleep: Callable[[float], None] = time.sleep) -> int:
    """The GPU's utilisation (%) once `settle` has finished this process's work and NVML's window has
    passed; a reading over the limit is taken again after a longer wait (the tail of the job's own
    work is never a stranger's), and the lower counts."""
    settle()
    sleep(IDLE_PROBE_S)
    pct = int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    if pct >= BUSY_WHILE_IDLE_PCT:
        sleep(IDLE_CONFIRM_S)
        pct = min(pct, int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
    return pct


class _Watcher:
    def __init__(self, read: Callable[[], Sample] | None, interval_s: float):
        self.read, self.interval_s = read, interval_s
        self.samples: list[Sample] = []
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-watch", daemon=True)
        self.result: GpuWatch | None = None

    def _run(self) -> None:
        while True:
            try:
                self.samples.append(self.read())
            except Exception as exc:   # a failing NVML query ends the watch, never the bench
                self.error = f"NVML query failed: {exc}"
                return
            if self._stop.wait(self.interval_s):
                return


@contextmanager
def watch_gpu(device_index: int | None = None, *, interval_s: float = INTERVAL_S,
              nvml: Any = None, settle: Callable[[], None] | None = None,
              own_pids: Collection[int] = ()) -> Iterator[_Watcher]:
    """Sample the GPU while the block runs, and probe it idle before and after; `.result` holds the
    `GpuWatch` afterwards. `own_pids`: the job's other processes on the GPU (a side host), not counted
    as sharing it; `nvml` and `settle` stand in for `pynvml` and `torch.cuda.synchronize` (tests)."""
    try:
        nvml = nvml or import_nvml()
        nvml.nvmlInit()
        handle = device_handle(nvml, device_index)
    except Exception as exc:       # no driver, no library: say so, time as before
        unwatched = _Watcher(None, interval_s)
        unwatched.result = GpuWatch(available=False, reason=f"no NVML: {exc}")
        yield unwatched
        return
    settle = settle or _synchronize
    probes = [_probe(nvml, handle, settle)]
    watcher = _Watcher(lambda: _read(nvml, handle), interval_s)
    watcher._thread.start()
    try:
        yield watcher
    finally:
        watcher._stop.set()
        watcher._thread.join(timeout=5)
        probes.append(_probe(nvml, handle, settle))
        watcher.result = summarise(watcher.samples, {os.getpid(), *own_pids}, interval_s,
                                   [p for p in probes if p is not None])
        if watcher.error:
            watcher.result.problems.append(watcher.error)
        shutdown(nvml)


def shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:   # noqa: S110 (shutting down a library that already failed)
        pass


def _probe(nvml: Any, handle: Any, settle: Callable[[], None]) -> int | None:
    try:
        return busy_while_idle(nvml, handle, settle)
    except Exception:   # noqa: BLE001  a GPU without utilisation counters: the other checks stand
        return None


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def device_handle(nvml: Any, device_index: int | None = None) -> Any:
    """NVML's handle of the GPU this process times on: `device_index`; else the one CUDA_VISIBLE_DEVICES
    names by UUID (a slot's child: the other GPUs' nodes are absent from its box); else torch's."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if device_index is None and visible.startswith("GPU-") and "," not in visible:
        return nvml.nvmlDeviceGetHandleByUUID(visible)
    return nvml.nvmlDeviceGetHandleByIndex(nvml_index() if device_index is None else device_index)


def nvml_index() -> int:
    """NVML's index of the CUDA device torch uses (they differ under CUDA_VISIBLE_DEVICES)."""
    import torch

    device = torch.cuda.current_device()
    to_nvml = getattr(torch.cuda, "_get_nvml_device_index", None)
    return int(to_nvml(device)) if to_nvml else device


def import_nvml() -> Any:
    import pynvml

    return pynvml


def _read(nvml: Any, handle: Any) -> Sample:
    reasons_of = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    processes = {p.pid: int(p.usedGpuMemory or 0) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)}
    return Sample(sm_clock_mhz=nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                  mem_clock_mhz=nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                  temperature_c=nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
                  power_w=nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                  reasons=int(reasons_of(handle)), processes=processes)
