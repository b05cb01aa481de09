"""Which Nsight Compute metric names measure each gate quantity, per GPU architecture.

Pure data and lookups (stdlib only). The profile stage requests exactly `requested_metrics(arch)`;
the report reader looks every quantity up by the same names, so a name that comes back n/a is
seen and listed, never silently passed.

Sources (see the project's NCU-FACTS notes, ncu 2025.3.1):
- `ncu --query-metrics --chips ga100,ga102,ad102,gh100`: CC 8.9 (Ada) deprecates the tensor-pipe
  names in favour of `..._v2`; `sm__inst_executed_pipe_tensor_op_gmma` (warpgroup MMA, wgmma)
  exists only on CC 9.0. NVIDIA's own ComputeWorkloadAnalysis section switches exactly there.
- Bank conflicts: NVIDIA's SharedMemoryConflicts rule: conflict % = conflicts / wavefronts, and
  shared-load requests = LDS + LDSM instructions (ldmatrix traffic lands in the `_op_ld` counters).
- "Achieved Occupancy" in ncu's Occupancy section *is* `sm__warps_active.avg.pct_of_peak_sustained_active`.
- `launch__*` values are launch attributes: always in a report, never requested, no replay cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.errors import ProfilerError

_ACTIVE = ".avg.pct_of_peak_sustained_active"
_ELAPSED = ".avg.pct_of_peak_sustained_elapsed"


@dataclass(frozen=True)
class GateMetric:
    quantity: str                  # what it measures, e.g. "tensor_pipe_pct"
    names: tuple[str, ...]         # the first is requested; later ones are aliases seen in reports
    launch_attribute: bool = False  # launch__*: recorded with every launch, never requested


def _common() -> list[GateMetric]:
    """The metrics whose names are the same on sm_80, sm_86, sm_89 and sm_90."""
    return [
        GateMetric("duration_ns", ("gpu__time_duration.sum",)),
        GateMetric("ld_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",)),
        GateMetric("ld_wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",)),
        GateMetric("st_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",)),
        GateMetric("st_wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",)),
        GateMetric("lds_inst", ("smsp__sass_inst_executed_op_shared_ld.sum",)),
        GateMetric("ldsm_inst", ("smsp__inst_executed_op_ldsm.sum",)),
        GateMetric("warps_active_pct", ("sm__warps_active" + _ACTIVE,)),
        # gpu__dram_throughput and dram__throughput gave identical values on the H200.
        GateMetric("dram_pct", ("gpu__dram_throughput" + _ELAPSED, "dram__throughput" + _ELAPSED)),
        GateMetric("sm_throughput_pct", ("sm__throughput" + _ELAPSED,)),
        # L1TEX global loads: sectors (32 B each) over warp-level requests, ncu's "Sectors/Req" of
        # global loads. A warp's coalesced 4-byte loads touch 4 sectors per request, one 4-byte load
        # per 128-B row 32 (H200 fixture: WMMA fp16 tiles 8.0, coalesced transpose reads 4.0). Both
        # are l1tex counters, like the shared-memory ones above; tests/gpu/test_sectors_gate.py
        # reads `replay_passes` with and without them.
        GateMetric("global_ld_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",)),
        GateMetric("global_ld_requests", ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)),
        GateMetric("local_ld_inst", ("smsp__sass_inst_executed_op_local_ld.sum",)),
        GateMetric("local_st_inst", ("smsp__sass_inst_executed_op_local_st.sum",)),
        GateMetric("registers", ("launch__registers_per_thread",), launch_attribute=True),
        # static + dynamic + the driver's reserved 1 KiB per block (on sm_90)
        GateMetric("smem_per_block_bytes", ("launch__shared_mem_per_block",), launch_attribute=True),
    ]


def _tensor(suffix: str) -> list[GateMetric]:
    """Tensor-pipe metrics; `suffix` is "" or "_v2" (CC 8.9)."""
    return [
        # all tensor ops (HMMA, and on sm_90 HGMMA/QGMMA too): the gated utilisation
        GateMetric("tensor_pipe_pct", (f"sm__pipe_tensor_cycles_active{suffix}" + _ACTIVE,)),
        GateMetric("hmma_inst_pct", (f"sm__inst_executed_pipe_tensor_op_hmma{suffix}" + _ACTIVE,)),
    ]


_GMMA = GateMetric("gmma_inst_pct", ("sm__inst_executed_pipe_tensor_op_gmma" + _ACTIVE,))

_CATALOG: dict[str, tuple[GateMetric, ...]] = {
    "sm_80": tuple(_common() + _tensor("")),
    "sm_86": tuple(_common() + _tensor("")),
    "sm_89": tuple(_common() + _tensor("_v2")),
    "sm_90": tuple(_common() + _tensor("") + [_GMMA]),
}

SUPPORTED_ARCHS: tuple[str, ...] = tuple(_CATALOG)


def arch_of(major: int, minor: int) -> str:
    """Compute capability (9, 0) -> "sm_90"."""
    return f"sm_{major}{minor}"


def catalog(arch: str) -> tuple[GateMetric, ...]:
    """The gate metrics for one architecture. Raises ProfilerError for an arch without a catalog."""
    base = arch.removesuffix("a")            # sm_90a runs with sm_90's counters
    if base not in _CATALOG:
        raise ProfilerError(
            f"no Nsight Compute gate-metric catalog for {arch} (known: {', '.join(SUPPORTED_ARCHS)})"
        )
    return _CATALOG[base]


def requested_metrics(arch: str) -> list[str]:
    """The `--metrics` list for `arch`: one name per quantity, launch attributes left out."""
    return [m.names[0] for m in catalog(arch) if not m.launch_attribute]


def reading_catalog(arch: str) -> tuple[GateMetric, ...]:
    """Names to look for in a report from `arch`; for an unknown arch, every known name per quantity."""
    try:
        return catalog(arch)
    except ProfilerError:
        merged: dict[str, GateMetric] = {}
        for metrics in _CATALOG.values():
            for m in metrics:
                seen = merged.get(m.quantity)
                names = m.names if seen is None else seen.names + tuple(
                    n for n in m.names if n not in seen.names)
                merged[m.quantity] = GateMetric(m.quantity, names, m.launch_attribute)
        return tuple(merged.values())
