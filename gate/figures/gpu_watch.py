"""The revision page's GPU-watch panel (pure): what NVML saw while the job timed, the clock policy it
ran under, its environment, and whether the baseline revision's own figures came from another one.

In: the bench stage's stored JSON (`BenchResult`, with its `gpu_watch`), the job's environment key
and the baseline revision's (`JobDetail`). Out: plain rows and sentences the template lays out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gate.domain.environment import describe


@dataclass(frozen=True)
class GpuWatchPanel:
    rows: list[tuple[str, str]]                        # (what, value) in reading order
    problems: list[str] = field(default_factory=list)  # why the latency rows were not trusted
    notes: list[str] = field(default_factory=list)     # environment and clock policy, in words


def _range(low: Any, high: Any, unit: str) -> str:
    if low is None or high is None:
        return "n/a"
    return f"{low} {unit}" if low == high else f"{low}..{high} {unit}"


def gpu_watch_panel(bench: dict[str, Any] | None, environment: str,
                    baseline_environment: str | None) -> GpuWatchPanel | None:
    """None when the job has no bench result (nothing was timed)."""
    if not bench:
        return None
    watch = bench.get("gpu_watch") or {}
    notes = [f"Environment: {describe(environment)}."]
    if baseline_environment is not None and baseline_environment != environment:
        notes.append(f"The baseline revision's own job ran in a different environment "
                     f"({describe(baseline_environment)}): its stored figures are not comparable with this "
                     f"job's; the comparison here is from this job's interleaved timing of both sides.")
    policy = bench.get("clock_policy") or "observe"
    rows = [("clock policy", policy + (f" ({bench['clock_note']})" if bench.get("clock_note") else ""))]
    if not watch.get("available"):
        rows.append(("GPU watch", f"not available: {watch.get('reason') or 'not recorded with this job'}"))
        return GpuWatchPanel(rows, [], notes)
    median = watch.get("sm_clock_mhz_median")
    rows += [
        ("SM clock", _range(watch.get("sm_clock_mhz_min"), watch.get("sm_clock_mhz_max"), "MHz")
         + (f" (median {median:g})" if median is not None else "")),
        ("memory clock", _range(watch.get("mem_clock_mhz_min"), watch.get("mem_clock_mhz_max"), "MHz")),
        ("clock-event reasons", ", ".join(watch.get("clock_events") or []) or "none"),
        ("temperature (max)", _range(watch.get("temperature_c_max"), watch.get("temperature_c_max"), "°C")),
        ("power (max)", _range(watch.get("power_w_max"), watch.get("power_w_max"), "W")),
        ("other processes", "; ".join(watch.get("other_processes") or []) or "none"),
        ("busy while this job was idle", " / ".join(f"{pct} %" for pct in watch.get("busy_while_idle_pct") or [])
         + " (before / after timing)" if watch.get("busy_while_idle_pct") else "not probed"),
        ("samples", f"{watch.get('samples', 0)} every {watch.get('interval_ms', 0):g} ms"),
    ]
    return GpuWatchPanel(rows, list(watch.get("problems") or []), notes)
