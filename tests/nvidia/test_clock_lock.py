"""The clock policy: observe touches nothing; lock pins and resets the SM clock, or falls back to
observe with the reason where NVML refuses; the policy applied is what the job records."""

from types import SimpleNamespace

import pytest

from gate.nvidia.clock_lock import apply


class FakeNvml(SimpleNamespace):
    NVML_CLOCK_SM = 1

    def __init__(self, refuse=False, reset_fails=False):
        super().__init__(calls=[], refuse=refuse, reset_fails=reset_fails)

    def nvmlInit(self): self.calls.append("init")
    def nvmlShutdown(self): self.calls.append("shutdown")
    def nvmlDeviceGetHandleByIndex(self, i): return f"gpu{i}"
    def nvmlDeviceGetDefaultApplicationsClock(self, h, kind): return 1755

    def nvmlDeviceSetGpuLockedClocks(self, h, low, high):
        if self.refuse:
            raise PermissionError("Insufficient Permissions")
        self.calls.append(("lock", low, high))

    def nvmlDeviceResetGpuLockedClocks(self, h):
        if self.reset_fails:
            raise RuntimeError("GPU is lost")
        self.calls.append("reset")


def test_observe_touches_no_clock():
    nvml = FakeNvml()
    with apply("observe", 0, nvml) as applied:
        pass
    assert (applied.policy, nvml.calls) == ("observe", [])


def test_lock_pins_the_default_applications_clock_and_resets_it_after():
    nvml = FakeNvml()
    with apply("lock", 0, nvml) as applied:
        assert nvml.calls == ["init", ("lock", 1755, 1755)]
    assert applied.policy == "lock" and applied.note == "SM clock locked at 1755 MHz"
    assert nvml.calls[-2:] == ["reset", "shutdown"]


def test_lock_not_permitted_falls_back_to_observe_and_says_why():
    nvml = FakeNvml(refuse=True)
    with apply("lock", 0, nvml) as applied:
        pass
    assert applied.policy == "observe"
    assert "not applied" in applied.note and "Insufficient Permissions" in applied.note
    assert nvml.calls == ["init", "shutdown"]


def test_a_lock_that_could_not_be_reset_is_said():
    nvml = FakeNvml(reset_fails=True)
    with apply("lock", 0, nvml) as applied:
        pass
    assert "NOT reset" in applied.note and "GPU is lost" in applied.note


def test_an_unknown_policy_is_refused_by_name():
    with pytest.raises(ValueError, match="'fixed'"):
        with apply("fixed", 0, FakeNvml()):
            pass
