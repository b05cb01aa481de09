"""The revision page's GPU-watch panel (pure): what NVML saw while the job timed, the clock policy it
ran under, its environment, and whether the baseline revision's own figures came from another one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from gate.domain.environment import describe
from gate.domain.results import BenchResult


@dataclass(frozen=True)
class GpuWatchPanel:
    rows: list[tuple[str, str]]                        # (what, value) in reading order
    problems: list[str] = field(default_factory=list)  # why the latency rows were not trusted
    notes: list[str] = field(default_factory=list)     # environment and clock policy, in words


def _range(low: float | None, high: float | None, unit: str) -> str:
    if low is None or high is None:
        return "n/a"
    return f"{low} {unit}" if low == high else f"{low}..{high} {unit}"


def gpu_watch_panel(bench: BenchResult | None, environment: str,
                    baseline_environment: str | None) -> GpuWatchPanel | None:
    """None when the job has no bench result (nothing was timed)."""
    if bench is None:
        return None
    notes = [f"Environment: {describe(environment)}."]
    if baseline_environment is not None and baseline_environment != environment:
        notes.append(f"The baseline revision's own job ran in a different environment "
                     f"({describe(baseline_environment)}): its stored figures are not comparable with this "
                     f"job's; the comparison here is from this job's interleaved timing of both sides.")
    policy = bench.clock_policy or "observe"
    rows = [("clock policy", policy + (f" ({bench.clock_note})" if bench.clock_note else ""))]
    watch = bench.gpu_watch
    if watch is None or not watch.available:
        why = watch.reason if watch is not None and watch.reason else "not recorded with this job"
        rows.append(("GPU watch", f"not available: {why}"))
        return GpuWatchPanel(rows, [], notes)
    median = watch.sm_clock_mhz_median
    busy = watch.busy_while_idle_pct
    rows += [
        ("SM clock", _range(watch.sm_clock_mhz_min, watch.sm_clock_mhz_max, "MHz")
         + (f" (median {median:g})" if median is not None else "")),
        ("memory clock", _range(watch.mem_clock_mhz_min, watch.mem_clock_mhz_max, "MHz")),
        ("clock-event reasons", ", ".join(watch.clock_events) or "none"),
        ("temperature (max)", _range(watch.temperature_c_max, watch.temperature_c_max, "°C")),
        ("power (max)", _range(watch.power_w_max, watch.power_w_max, "W")),
        ("other processes", "; ".join(watch.other_processes) or "none"),
        ("busy while this job was idle",
         " / ".join(f"{pct} %" for pct in busy) + " (before / after timing)" if busy else "not probed"),
        ("samples", f"{watch.samples} every {watch.interval_ms:g} ms"),
    ]
    return GpuWatchPanel(rows, list(watch.problems), notes)
