import pytest

from gate.errors import ProfilerError
from gate.nvidia.ncu_catalog import SUPPORTED_ARCHS, arch_of, catalog, reading_catalog, requested_metrics


def test_every_supported_arch_measures_the_same_quantities():
    quantities = {arch: {m.quantity for m in catalog(arch)} for arch in SUPPORTED_ARCHS}
    base = quantities["sm_80"]
    assert quantities["sm_86"] == base
    assert quantities["sm_89"] == base
    assert quantities["sm_90"] == base | {"gmma_inst_pct"}


def test_ada_requests_the_v2_tensor_pipe_names():
    names = requested_metrics("sm_89")
    assert "sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active" in names
    assert "sm__inst_executed_pipe_tensor_op_hmma_v2.avg.pct_of_peak_sustained_active" in names
    assert "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" not in names


def test_gmma_instructions_are_requested_on_hopper_only():
    gmma = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active"
    assert gmma in requested_metrics("sm_90")
    assert all(gmma not in requested_metrics(arch) for arch in ("sm_80", "sm_86", "sm_89"))


def test_bank_conflict_requests_include_ldsm():
    names = requested_metrics("sm_80")
    assert "smsp__inst_executed_op_ldsm.sum" in names
    assert "smsp__sass_inst_executed_op_shared_ld.sum" in names
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" in names


def test_launch_attributes_are_in_the_catalog_but_never_requested():
    assert "launch__registers_per_thread" in {n for m in catalog("sm_90") for n in m.names}
    assert not [n for n in requested_metrics("sm_90") if n.startswith("launch__")]


def test_arch_specific_target_uses_the_base_arch_counters():
    assert catalog("sm_90a") == catalog("sm_90")
    assert arch_of(9, 0) == "sm_90"


def test_unknown_arch_raises_profiler_error_naming_it():
    with pytest.raises(ProfilerError, match="sm_75"):
        requested_metrics("sm_75")


def test_reading_an_unknown_arch_accepts_every_known_name():
    tensor = next(m for m in reading_catalog("sm_100") if m.quantity == "tensor_pipe_pct")
    assert tensor.names == ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                            "sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active")
