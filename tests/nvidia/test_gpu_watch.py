"""The GPU watch: what NVML samples say about a timing (pure summary) and the sampler thread."""

from __future__ import annotations

import time
from types import SimpleNamespace

from gate.nvidia.gpu_watch import (IDLE_CONFIRM_S, IDLE_PROBE_S, Sample, busy_while_idle, summarise,
                                     watch_gpu)

OWN = {100}


def steady(n: int = 5, **kw) -> list[Sample]:
    base = dict(sm_clock_mhz=1980, mem_clock_mhz=2619, temperature_c=45, power_w=300.0, reasons=0)
    return [Sample(**{**base, **kw}) for _ in range(n)]


def test_a_steady_unshared_gpu_has_no_problems():
    watch = summarise(steady(processes={100: 2**30}), OWN)
    assert watch.available and watch.problems == []
    assert (watch.sm_clock_mhz_min, watch.sm_clock_mhz_max, watch.power_w_max) == (1980, 1980, 300.0)


def test_a_clock_that_moves_while_busy_is_a_problem_but_idle_samples_do_not_count():
    moved = summarise(steady(3) + steady(2, sm_clock_mhz=1755), OWN)
    assert moved.problems == ["SM clock moved 1755..1980 MHz while timing"]
    idle_between_rounds = summarise(steady(3) + steady(2, sm_clock_mhz=345, reasons=0x1), OWN)
    assert idle_between_rounds.problems == []


def test_throttle_reasons_are_named_and_settings_are_not():
    watch = summarise(steady(2) + steady(1, reasons=0x4 | 0x40) + steady(1, reasons=0x2), OWN)
    assert watch.clock_events == ["software power cap", "hardware thermal slowdown"]
    assert watch.problems == ["clocks throttled while timing: software power cap, hardware thermal slowdown"]


def test_another_process_on_the_gpu_is_named_with_its_memory():
    watch = summarise(steady(2) + steady(1, processes={100: 1, 4242: 3 * 2**30}), OWN)
    assert watch.other_processes == ["pid 4242: 3072 MiB"]
    assert "the GPU was shared" in watch.problems[0]


class FakeNvml(SimpleNamespace):
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, clocks):
        super().__init__(calls=0, clocks=iter(clocks), shut=False)

    def nvmlInit(self): pass
    def nvmlShutdown(self): self.shut = True
    def nvmlDeviceGetHandleByIndex(self, i): return f"gpu{i}"
    def nvmlDeviceGetClockInfo(self, h, kind):
        return next(self.clocks, 1980) if kind == self.NVML_CLOCK_SM else 2619
    def nvmlDeviceGetTemperature(self, h, kind): return 50
    def nvmlDeviceGetPowerUsage(self, h): return 250_000          # milliwatts
    def nvmlDeviceGetCurrentClocksEventReasons(self, h): return 0
    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=999_999, usedGpuMemory=2**30)]


def test_the_sampler_reads_nvml_until_the_block_ends():
    nvml = FakeNvml([1980, 1980, 1500])
    with watch_gpu(0, interval_s=0.01, nvml=nvml) as watch:
        time.sleep(0.2)
    result = watch.result
    assert result.available and result.samples >= 3 and nvml.shut
    assert result.power_w_max == 250.0 and result.sm_clock_mhz_min == 1500
    assert any("SM clock moved" in p for p in result.problems)
    assert any("pid 999999: 1024 MiB" in p for p in result.problems)


def test_the_jobs_own_side_host_does_not_count_as_sharing_the_gpu():
    with watch_gpu(0, interval_s=0.01, nvml=FakeNvml([1980] * 50), own_pids=[999_999]) as watch:
        time.sleep(0.05)
    assert watch.result.other_processes == [] and watch.result.problems == []


def test_without_nvml_the_watch_says_why_and_the_block_still_runs():
    class Broken:
        def nvmlInit(self):
            raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    ran = []
    with watch_gpu(0, nvml=Broken()) as watch:
        ran.append(True)
    assert ran and not watch.result.available and "libnvidia-ml" in watch.result.reason
    assert watch.result.problems == []


class Utilisation(SimpleNamespace):
    """NVML as a virtual machine shows it: no processes listed, utilisation readings in turn."""

    def __init__(self, readings):
        super().__init__(readings=iter(readings), read=0)

    def nvmlDeviceGetUtilizationRates(self, h):
        self.read += 1
        return SimpleNamespace(gpu=next(self.readings))


def test_busy_while_idle_rereads_a_high_reading_after_a_longer_wait_and_keeps_the_lower():
    waits, settled = [], []
    tail_of_own_work = Utilisation([60, 0])
    assert busy_while_idle(tail_of_own_work, "gpu0", lambda: settled.append(1), waits.append) == 0
    assert settled == [1] and waits == [IDLE_PROBE_S, IDLE_CONFIRM_S] and tail_of_own_work.read == 2
    quiet = Utilisation([3])
    assert busy_while_idle(quiet, "gpu0", lambda: None, waits.append) == 3 and quiet.read == 1
    assert busy_while_idle(Utilisation([100, 97]), "gpu0", lambda: None, waits.append) == 97


def test_a_gpu_busy_while_the_job_was_idle_is_shared_even_when_nvml_lists_no_process():
    # On the GPU machine (a VM) a loader process running matmuls was invisible to NVML's process list:
    # the job ended inconclusive for the power cap its load caused, not for the sharing itself.
    watch = summarise([Sample(1980, 2619, 50, 300.0, 0)], {1}, busy_while_idle_pct=[0, 97])
    assert watch.busy_while_idle_pct == [0, 97]
    assert watch.problems == ["the GPU was shared while timing (busy 97 % while this job was idle; "
                              "NVML names no process here)"]
    assert summarise([Sample(1980, 2619, 50, 300.0, 0)], {1}, busy_while_idle_pct=[2, 4]).problems == []


def test_the_watch_probes_the_idle_gpu_before_and_after_the_block():
    class VmNvml(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, h): return []
        def nvmlDeviceGetUtilizationRates(self, h): return SimpleNamespace(gpu=100)

    settled = []
    with watch_gpu(0, interval_s=0.01, nvml=VmNvml([1980]), settle=lambda: settled.append(1)) as watch:
        time.sleep(0.05)
    assert len(settled) == 2 and watch.result.busy_while_idle_pct == [100, 100]
    assert any("busy 100 % while this job was idle" in p for p in watch.result.problems)


def test_boost_regulation_is_told_apart_and_sharing_or_heat_forbid_a_verdict():
    capped = summarise([Sample(1980, 2619, 60, 690.0, 0x4), Sample(1935, 2619, 60, 699.0, 0x4)], {1})
    assert capped.boost_spread_pct == round((1980 - 1935) / 1980 * 100, 2)
    assert capped.problems[0] == "SM clock moved 1935..1980 MHz while timing"
    hot = summarise([Sample(1980, 2619, 90, 690.0, 0x20)], {1})
    assert hot.problems and hot.boost_spread_pct is None
    shared = summarise([Sample(1980, 2619, 60, 690.0, 0x4)], {1}, busy_while_idle_pct=[99, 99])
    assert shared.boost_spread_pct is None and shared.problems[0].startswith("the GPU was shared")
    assert summarise([Sample(1980, 2619, 50, 300.0, 0)], {1}).boost_spread_pct is None
