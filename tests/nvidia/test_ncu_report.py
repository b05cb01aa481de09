from pathlib import Path

import pytest

from gate.errors import ProfilerError
from gate.nvidia.ncu_report import Launch, conflict_pct, kernel_metrics, parse_range, range_name, read_report

HOPPER = {"device__attribute_compute_capability_major": 9, "device__attribute_compute_capability_minor": 0}


def test_transpose_report_separates_conflicting_and_padded_tiles(ncu_fixture):
    wmma, unpadded, padded = read_report(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    # each instance named with its template arguments (issue 43), where Nsight Compute's function name
    # is `transpose_smem` for both
    assert [k.kernel for k in (wmma, unpadded, padded)] == ["wmma_abt", "transpose_smem<0>", "transpose_smem<1>"]
    assert [k.mangled for k in (wmma, unpadded, padded)] == [   # what ptxas names the compiled functions
        "_Z8wmma_abtPK6__halfS1_Pfiii", "_Z14transpose_smemILi0EEvPKfPfi", "_Z14transpose_smemILi1EEvPKfPfi"]
    assert unpadded.ld_bank_conflicts == 16_383_259 and unpadded.ld_wavefronts == 16_907_547
    assert unpadded.ld_bank_conflict_pct == pytest.approx(96.899, abs=1e-3)
    assert padded.ld_bank_conflict_pct == pytest.approx(100 * 25_172 / 549_460)
    assert wmma.ld_bank_conflict_pct == 0.0          # 0 conflicts over 0 wavefronts


def test_transpose_report_reads_time_occupancy_tensor_and_launch(ncu_fixture):
    wmma, unpadded, _ = read_report(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    assert wmma.duration_ns == 54_528
    assert wmma.warps_active_pct == pytest.approx(44.3, abs=0.05)
    assert wmma.tensor_pipe_pct == pytest.approx(4.40, abs=0.005)
    assert wmma.compute_capability == "9.0"
    assert (wmma.registers, wmma.smem_per_block_bytes, wmma.grid, wmma.block) == (32, 1024, "(1024, 1, 1)", "(128, 1, 1)")
    assert wmma.replay_passes == 38 and wmma.missing_metrics == []
    assert unpadded.local_ld_inst == 0 and unpadded.ld_requests == 524_288


def test_sdpa_report_shows_gmma_activity_for_the_cudnn_kernel_only(ncu_fixture):
    kernels = read_report(ncu_fixture("h200-sdpa-gate-metrics.ncu-rep"))
    active = [k.kernel for k in kernels if k.gmma_inst_pct]
    assert len(active) == 1 and active[0].startswith("cudnn_generated_fort_native_sdpa_sm90")
    cudnn = next(k for k in kernels if k.kernel == active[0])
    assert cudnn.gmma_inst_pct == pytest.approx(3.02, abs=0.005)
    assert cudnn.tensor_pipe_pct == pytest.approx(32.24, abs=0.005)
    assert cudnn.dram_pct == pytest.approx(2.94, abs=0.005)    # read through the dram__throughput alias
    assert (cudnn.registers, cudnn.smem_per_block_bytes) == (168, 135_168)


def test_sdpa_report_lists_the_metrics_it_lacks(ncu_fixture):
    flash = read_report(ncu_fixture("h200-sdpa-gate-metrics.ncu-rep"))[0]
    assert "smsp__sass_inst_executed_op_local_ld.sum" in flash.missing_metrics
    assert flash.local_ld_inst is None and flash.ld_requests is None


def test_garbage_file_raises_profiler_error_naming_it(tmp_path: Path):
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"this is not a report\x00\x01" * 100)
    with pytest.raises(ProfilerError, match="junk.ncu-rep"):
        read_report(junk)


def test_missing_file_raises_profiler_error_naming_it(tmp_path: Path):
    with pytest.raises(ProfilerError, match="absent.ncu-rep"):
        read_report(tmp_path / "absent.ncu-rep")


def test_metric_that_is_na_stays_none_and_is_listed():
    m = kernel_metrics(Launch("k", values={**HOPPER, "gpu__time_duration.sum": 1000.0}))
    assert m.duration_ns == 1000.0
    assert m.tensor_pipe_pct is None
    assert "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" in m.missing_metrics
    assert "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active" in m.missing_metrics
    assert "gpu__time_duration.sum" not in m.missing_metrics


def test_ada_launch_is_read_with_v2_names():
    ada = {"device__attribute_compute_capability_major": 8, "device__attribute_compute_capability_minor": 9}
    m = kernel_metrics(Launch("k", values={**ada, "sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active": 55.0}))
    assert m.tensor_pipe_pct == 55.0
    assert m.gmma_inst_pct is None
    assert not any("gmma" in n for n in m.missing_metrics)   # not a quantity on sm_89


def test_conflict_rate_is_conflicts_over_wavefronts():
    assert conflict_pct(31.0, 32.0) == pytest.approx(96.875)
    assert conflict_pct(0.0, 0.0) == 0.0
    assert conflict_pct(None, 10.0) is None
    assert conflict_pct(5.0, 0.0) is None     # impossible counts are not turned into a rate


def test_nvtx_range_round_trips_shape_and_dtype():
    label, dtype = parse_range(("outer", range_name("b1_h8_s512_d64_causal", "float16")))
    assert (label, dtype) == ("b1_h8_s512_d64_causal", "float16")
    assert parse_range(("unrelated",)) == ("", "")


def test_shared_memory_per_launch_is_split_into_static_and_dynamic(ncu_fixture):
    flash, combine, cudnn, _ = read_report(ncu_fixture("h200-sdpa-gate-metrics.ncu-rep"))
    assert (flash.smem_static_bytes, flash.smem_dynamic_bytes, flash.smem_per_block_bytes) == (0, 73_728, 74_752)
    assert (combine.smem_static_bytes, combine.smem_dynamic_bytes) == (80, 0)
    assert cudnn.smem_dynamic_bytes == 134_144        # all of cuDNN's tile buffers are dynamic
