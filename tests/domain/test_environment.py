"""The environment key and cycle-normalised figures (gate.domain.environment)."""

import pytest

from gate.domain.environment import describe, environment_key, kilocycles, stored_environment


def test_the_key_names_gpu_driver_and_clock_policy():
    assert environment_key("NVIDIA H200", "570.86", "observe") == "NVIDIA H200 | driver 570.86 | clocks observe"
    assert environment_key("NVIDIA H200", "", "") == "NVIDIA H200 | driver ? | clocks observe"
    assert environment_key("", "570.86", "lock") == "" and describe("") == "unknown environment"


def test_a_stored_job_reads_its_key_from_fingerprint_and_bench_json():
    fp = {"gpu_name": "NVIDIA H100 80GB HBM3", "driver": "550.54"}
    assert stored_environment(fp, {"clock_policy": "lock"}) == "NVIDIA H100 80GB HBM3 | driver 550.54 | clocks lock"
    assert stored_environment(fp, None).endswith("clocks observe")   # jobs stored before the policy existed
    assert stored_environment(None, None) == ""


def test_kilocycles_are_microseconds_times_megahertz_over_a_thousand():
    assert kilocycles(457.0, 1980) == pytest.approx(904.86)
    # The same work at a lower clock takes longer in µs and the same in cycles.
    assert kilocycles(457.0 * 1980 / 1755, 1755) == pytest.approx(kilocycles(457.0, 1980))
    with pytest.raises(ValueError, match="SM clock must be positive"):
        kilocycles(1.0, 0)


def test_the_setting_accepts_observe_and_lock_only():
    from pydantic import ValidationError

    from gate.config import Settings

    assert Settings().clock_policy == "observe"
    assert Settings(clock_policy="lock").run_options().clock_policy == "lock"
    with pytest.raises(ValidationError, match="clock_policy"):
        Settings(clock_policy="fixed")
