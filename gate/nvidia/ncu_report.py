"""Read an Nsight Compute report (.ncu-rep) into the gate metrics of every profiled kernel launch, for
the profile stage and `gate profile import`, without a GPU (the `ncu-report` package, or an ncu
install's `extras/python`). Everything after loading is pure (`kernel_metrics`).
"""

from __future__ import annotations

import dataclasses
import glob
import importlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from gate.domain import KernelMetrics
from gate.errors import ProfilerError, ToolMissingError
from gate.nvidia.ncu_catalog import arch_of, reading_catalog
from gate.nvidia.source_counters import RawInstruction, read_instructions
from gate.nvidia.symbols import launch_name

RANGE_PREFIX = "gate:"   # NVTX push/pop range per profiled call: "gate:<shape label>:<dtype>"
_LAUNCH_ATTRIBUTES = (
    "device__attribute_compute_capability_major", "device__attribute_compute_capability_minor",
    "launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z",
    "launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z",
    "profiler__replayer_passes",
    # shared memory per block by origin (NCU-FACTS.md: launch__shared_mem_per_block is their sum):
    # static (__shared__ arrays, what ptxas reports), dynamic (the launch's third <<<>>> argument,
    # invisible to ptxas), and the driver's reserved 1 KiB per block on sm_90
    "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_driver",
)


@dataclass
class Launch:
    """One profiled kernel launch as it is stored in a report, before interpretation."""

    kernel: str                                   # function name, e.g. "transpose_smem"
    demangled: str = ""                           # full signature, e.g. "void at::native::..."
    mangled: str = ""                             # the linker's name, as ptxas prints it: "_ZN2at6native..."
    values: dict[str, float | int | str | None] = field(default_factory=dict)  # metric -> value
    nvtx_ranges: tuple[str, ...] = ()             # push/pop range stack at launch (with --nvtx)
    instructions: list[RawInstruction] = field(default_factory=list)  # SourceCounters, per SASS instruction


def range_name(shape_label: str, dtype: str) -> str:
    return f"{RANGE_PREFIX}{shape_label}:{dtype}"


def parse_range(ranges: tuple[str, ...]) -> tuple[str, str]:
    """(shape label, dtype) from the innermost gate range of a launch's NVTX stack, or ("", "")."""
    for name in reversed(ranges):
        if name.startswith(RANGE_PREFIX):
            label, _, dtype = name.removeprefix(RANGE_PREFIX).rpartition(":")
            return label, dtype
    return "", ""


def _number(value: float | int | str | None) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None


def conflict_pct(conflicts: float | None, wavefronts: float | None) -> float | None:
    """Bank conflicts as % of shared-memory wavefronts; no wavefronts and no conflicts -> 0.0."""
    if conflicts is None or wavefronts is None:
        return None
    if wavefronts == 0:
        return 0.0 if conflicts == 0 else None
    return 100.0 * conflicts / wavefronts


# A catalogue quantity named like a `KernelMetrics` field is carried into it as read, so a new
# counter is one `GateMetric` and one field, with no code here.
_FIELDS = frozenset(f.name for f in dataclasses.fields(KernelMetrics))


def kernel_metrics(launch: Launch) -> KernelMetrics:
    """The gate metrics of one launch; quantities whose metric is n/a stay None and are listed."""
    v = launch.values
    major, minor = _number(v.get(_LAUNCH_ATTRIBUTES[0])), _number(v.get(_LAUNCH_ATTRIBUTES[1]))
    arch = arch_of(int(major), int(minor)) if major is not None and minor is not None else "unknown"
    q: dict[str, float | None] = {}
    missing: list[str] = []
    for metric in reading_catalog(arch):
        found = next((_number(v.get(n)) for n in metric.names if _number(v.get(n)) is not None), None)
        q[metric.quantity] = found
        if found is None:
            missing.append(metric.names[0])
    ld_requests = None
    if q["lds_inst"] is not None and q["ldsm_inst"] is not None:
        ld_requests = q["lds_inst"] + q["ldsm_inst"]
    shape, dtype = parse_range(launch.nvtx_ranges)

    def dims(kind: str) -> str:
        xyz = [_number(v.get(f"launch__{kind}_dim_{a}")) for a in "xyz"]
        return "" if None in xyz else "({}, {}, {})".format(*(int(d) for d in xyz if d is not None))

    def whole(x: float | None) -> int | None:
        return None if x is None else int(x)

    # as read: duration, the tensor, warps, DRAM and SM percentages, the conflict and spill counters
    # (gmma_inst_pct is absent from the catalog, so None, below sm_90)
    read = {quantity: value for quantity, value in q.items() if quantity in _FIELDS}
    return KernelMetrics(**{
        **read,
        "kernel": launch_name(launch.kernel, launch.mangled, launch.demangled), "demangled": launch.demangled,
        "mangled": launch.mangled,
        "shape": shape, "dtype": dtype,
        "ld_bank_conflict_pct": conflict_pct(q["ld_bank_conflicts"], q["ld_wavefronts"]),
        "st_bank_conflict_pct": conflict_pct(q["st_bank_conflicts"], q["st_wavefronts"]),
        "ld_requests": ld_requests, "achieved_occupancy_pct": q["warps_active_pct"],
        "registers": whole(q["registers"]), "smem_per_block_bytes": whole(q["smem_per_block_bytes"]),
        "smem_static_bytes": whole(_number(v.get("launch__shared_mem_per_block_static"))),
        "smem_dynamic_bytes": whole(_number(v.get("launch__shared_mem_per_block_dynamic"))),
        "grid": dims("grid"), "block": dims("block"),
        "compute_capability": "" if arch == "unknown" else f"{int(major or 0)}.{int(minor or 0)}",
        "replay_passes": whole(_number(v.get("profiler__replayer_passes"))),
        "missing_metrics": missing,
    })


def import_ncu_report(ncu_path: str = "ncu") -> ModuleType:
    """The `ncu_report` module: the installed package, else the one shipped beside `ncu`."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    candidates = []
    exe = shutil.which(ncu_path)
    if exe:
        candidates.append(Path(os.path.realpath(exe)).parent / "extras" / "python")
    # NVIDIA's standard install prefix; /usr/local/cuda/bin/ncu is often a wrapper script.
    candidates += [Path(p) for p in sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"))]
    for folder in candidates:
        if (folder / "ncu_report.py").is_file():
            sys.path.insert(0, str(folder))
            return importlib.import_module("ncu_report")
    raise ToolMissingError("no ncu_report module: install the `ncu-report` package or Nsight Compute")


def read_launches(path: Path, ncu_path: str = "ncu") -> list[Launch]:
    """Every kernel launch stored in the report, with the values of the catalog's metrics."""
    if not path.is_file():
        raise ProfilerError(f"{path}: no such Nsight Compute report")
    report = import_ncu_report(ncu_path)
    try:
        ctx = report.load_report(str(path))
        ranges = [ctx.range_by_idx(r) for r in range(ctx.num_ranges())]
        actions = [rng.action_by_idx(i) for rng in ranges for i in range(rng.num_actions())]
    except Exception as exc:  # the loader raises assorted RuntimeErrors for damaged files
        raise ProfilerError(f"{path}: not a readable Nsight Compute report: {exc}") from exc
    if not actions:
        raise ProfilerError(f"{path}: not a readable Nsight Compute report (no profiled kernels in it)")
    wanted = {n for m in reading_catalog("unknown") for n in m.names} | set(_LAUNCH_ATTRIBUTES)
    return [_launch(report, a, wanted) for a in actions]


def _launch(report: ModuleType, action: object, wanted: set[str]) -> Launch:
    values: dict[str, float | int | str | None] = {}
    for name in wanted:
        metric = action.metric_by_name(name)  # type: ignore[attr-defined]
        values[name] = metric.value() if metric is not None and metric.has_value() else None
    ranges: tuple[str, ...] = ()
    state = action.nvtx_state()  # type: ignore[attr-defined]
    if state is not None:
        for domain_id in state.domains():
            ranges += tuple(state.domain_by_id(domain_id).push_pop_ranges())
    return Launch(
        kernel=action.name(report.IAction.NameBase_FUNCTION),  # type: ignore[attr-defined]
        demangled=action.name(report.IAction.NameBase_DEMANGLED),  # type: ignore[attr-defined]
        mangled=action.name(report.IAction.NameBase_MANGLED),  # type: ignore[attr-defined]
        values=values, nvtx_ranges=ranges, instructions=read_instructions(action),
    )


def read_report(path: Path, ncu_path: str = "ncu") -> list[KernelMetrics]:
    """The gate metrics of every kernel launch in an .ncu-rep, in launch order."""
    return [kernel_metrics(launch) for launch in read_launches(path, ncu_path)]
