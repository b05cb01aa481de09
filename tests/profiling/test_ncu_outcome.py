"""How the profile stage reads ncu's run: whose fault a failure is, and which shape a launch was."""

import pytest

from gate.domain import KernelMetrics
from gate.errors import ProfilerError
from gate.profiling.profile import attribute_by_order, check_ncu_run
from gate.profiling.profile_session import TargetStatus

OK = TargetStatus("ok", regions=[["s512", "float16"]])
PERM = ("==PROF== Connected to process 4242\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0.\n")


def test_counter_permission_error_becomes_profiler_error_with_ncus_message():
    with pytest.raises(ProfilerError, match="ERR_NVGPUCTRPERM - The user does not have permission"):
        check_ncu_run(PERM, 1, OK)


def test_counter_permission_error_wins_over_a_target_that_looks_fine():
    with pytest.raises(ProfilerError, match="ERR_NVGPUCTRPERM"):
        check_ncu_run(PERM, 0, TargetStatus("kernel_fault", "RuntimeError"))


def test_library_not_loaded_becomes_profiler_error():
    out = "==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n"
    with pytest.raises(ProfilerError, match="LibraryNotLoaded"):
        check_ncu_run(out, 1, None)


def test_any_error_line_becomes_profiler_error_even_with_exit_code_zero():
    with pytest.raises(ProfilerError, match="==ERROR== unrecognised option"):
        check_ncu_run("==ERROR== unrecognised option '--bogus'\n", 0, OK)


def test_kernel_fault_in_the_target_is_a_failed_result():
    out = "==ERROR== The application returned an error code (3).\n"
    reason = check_ncu_run(out, 3, TargetStatus("kernel_fault", "RuntimeError: CUDA error: an illegal memory access"))
    assert reason is not None and "illegal memory access" in reason


def test_target_that_died_inside_the_kernels_call_is_a_failed_result():
    reason = check_ncu_run("==ERROR== The application returned an error code (139).\n", 139,
                           TargetStatus("running", "s512/float16"))
    assert reason is not None and "s512/float16" in reason and "139" in reason


def test_no_kernels_profiled_after_the_calls_ran_is_the_kernels_fault():
    reason = check_ncu_run("==WARNING== No kernels were profiled.\n", 0, OK)
    assert reason is not None and "launched no CUDA kernel" in reason and "s512/float16" in reason


def test_no_kernels_profiled_without_a_profiled_call_is_infrastructure():
    with pytest.raises(ProfilerError, match="no profiled call"):
        check_ncu_run("==WARNING== No kernels were profiled.\n", 0, TargetStatus("ok"))


def test_target_that_could_not_start_is_infrastructure():
    with pytest.raises(ProfilerError, match="could not start: no CUDA device"):
        check_ncu_run("", 4, TargetStatus("setup_error", "no CUDA device visible"))


def test_missing_target_status_is_infrastructure():
    with pytest.raises(ProfilerError, match="left no status"):
        check_ncu_run("something odd\n", 1, None)


def test_clean_run_reads_the_report():
    assert check_ncu_run("==PROF== Profiling \"k\" - 0: 0%....100% - 12 passes\n", 0, OK) is None


def test_launch_order_attribution_splits_launches_evenly_over_regions():
    kernels = [KernelMetrics("a"), KernelMetrics("b"), KernelMetrics("a"), KernelMetrics("b")]
    attribute_by_order(kernels, [["s512", "float16"], ["s4096", "float16"]])
    assert [k.shape for k in kernels] == ["s512", "s512", "s4096", "s4096"]


def test_launch_order_attribution_leaves_uneven_launches_unattributed():
    kernels = [KernelMetrics("a"), KernelMetrics("b"), KernelMetrics("c")]
    attribute_by_order(kernels, [["s512", "float16"], ["s4096", "float16"]])
    assert [k.shape for k in kernels] == ["", "", ""]
