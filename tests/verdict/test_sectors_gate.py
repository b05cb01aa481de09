"""max_global_sectors_per_request (issue 23, point 7): uncoalesced global loads, judged from the
same Nsight Compute session as the other ncu rules, on reports recorded on an H200."""

from __future__ import annotations

import pytest

from gate.domain import Gates, KernelMetrics, ProfileResult, RuleOutcome, StageStatus
from gate.domain.manifest import profile_rules_set
from gate.domain.rule_catalog import Rule
from gate.nvidia.ncu_catalog import requested_metrics
from gate.nvidia.ncu_report import read_report
from gate.verdict.rules import ncu_absolute_rows

SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"


def _profile(kernels: list[KernelMetrics], shape: str) -> ProfileResult:
    for k in kernels:
        k.shape = shape
    return ProfileResult(StageStatus.PASSED, kernels=kernels)


def test_the_profile_pass_requests_both_counters_on_every_arch():
    for arch in ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"):
        assert {SECTORS, REQUESTS} <= set(requested_metrics(arch))


def test_the_h200_report_reads_wmma_tiles_at_8_and_coalesced_rows_at_4(ncu_fixture):
    wmma, unpadded, padded = read_report(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    assert (wmma.global_ld_sectors, wmma.global_ld_requests) == (8_388_608, 1_048_576)
    assert wmma.global_sectors_per_request == 8.0            # 16 rows of 32 B per fp16 WMMA tile load
    assert unpadded.global_sectors_per_request == padded.global_sectors_per_request == 4.0


def test_the_gate_rejects_the_worst_launch_over_its_limit_and_passes_the_rest(ncu_fixture):
    wmma, unpadded, padded = read_report(ncu_fixture("h200-wmma-transpose-full.ncu-rep"))
    gates = Gates(max_global_sectors_per_request=6)
    assert profile_rules_set(gates)                          # the profile stage becomes required
    (gemm,) = ncu_absolute_rows(_profile([wmma], "gemm"), gates)
    assert gemm.rule == Rule.MAX_GLOBAL_SECTORS_PER_REQUEST and gemm.outcome is RuleOutcome.FAIL
    assert gemm.reason == "global loads 8 sectors/request is over the limit of 6 sectors/request"
    assert (gemm.value, gemm.threshold, gemm.unit) == (8.0, 6, "sectors/request")
    (transpose,) = ncu_absolute_rows(_profile([unpadded, padded], "t"), gates)
    assert transpose.outcome is RuleOutcome.PASS and transpose.value == 4.0
    (both,) = ncu_absolute_rows(_profile([padded, wmma], "mixed"), gates)   # one bad launch is enough
    assert both.outcome is RuleOutcome.FAIL and both.value == 8.0


def test_a_report_without_the_counters_is_not_run_never_a_pass(ncu_fixture):
    kernels = read_report(ncu_fixture("h200-sdpa-gate-metrics.ncu-rep"))   # recorded before the gate
    assert all(k.global_sectors_per_request is None and SECTORS in k.missing_metrics for k in kernels)
    (row,) = ncu_absolute_rows(_profile(kernels, "s"), Gates(max_global_sectors_per_request=8))
    assert row.outcome is RuleOutcome.NOT_RUN and row.reason == "metric not collected for this shape"


@pytest.mark.parametrize(("sectors", "requests", "expected"), [(4096.0, 128.0, 32.0), (0.0, 0.0, None),
                                                                (None, 10.0, None)])
def test_sectors_per_request_of_one_launch(sectors, requests, expected):
    k = KernelMetrics("k", global_ld_sectors=sectors, global_ld_requests=requests)
    assert k.global_sectors_per_request == expected
