"""Which arch a kernel is built for on the local GPU: an arch-specific target (`sm_90a`) only on its own GPU."""

import pytest

from gate.compiling.toolchain import archs_for_device


@pytest.mark.parametrize(("manifest", "device", "expected"), [
    (["sm_90a"], "sm_90", ["sm_90a"]),             # wgmma kernels: the arch-specific target
    (["sm_80", "sm_90"], "sm_90", ["sm_90"]),
    (["sm_80", "sm_90"], "sm_89", ["sm_89"]),      # portable code: built for the GPU at hand
    (["sm_80", "sm_90a"], "sm_80", ["sm_80"]),
    (["sm_80", "sm_90a"], "sm_90", ["sm_90a"]),
    (["sm_90a", "sm_100a"], "sm_100", ["sm_100a"]),
    ([], "sm_80", ["sm_80"]),
])
def test_the_build_targets_the_gpu_at_hand(manifest, device, expected):
    assert archs_for_device(manifest, device) == expected


@pytest.mark.parametrize("device", ["sm_80", "sm_89", "sm_100", "sm_120"])
def test_an_sm_90a_only_kernel_has_no_target_on_other_gpus(device):
    assert archs_for_device(["sm_90a"], device) == []


def test_arch_specific_targets_of_two_other_gpus_leave_none_for_this_one():
    assert archs_for_device(["sm_90a", "sm_100a"], "sm_80") == []
