"""The ncu command line (`gate.nvidia.ncu_cli`): an argument list, the arch's gate metrics, and
the version ncu states."""

from pathlib import Path

from gate.nvidia.ncu_cli import command, parse_version

TARGET = ["python", "-m", "gate.profiling.profile_target", "spec.json"]


def _metrics_arg(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("--metrics") + 1].split(",")


def test_command_is_an_argument_list_that_ends_with_the_target():
    cmd = command("/opt/ncu", "sm_90", "base", Path("out/profile"), TARGET)
    assert cmd[0] == "/opt/ncu" and cmd[-len(TARGET):] == TARGET
    assert all(isinstance(a, str) for a in cmd)
    flags = dict(zip(cmd, cmd[1:]))
    assert flags["--cache-control"] == "all" and flags["--clock-control"] == "base"
    assert flags["--profile-from-start"] == "off" and "--nvtx" in cmd
    assert flags["-o"] == "out/profile"


def test_clock_control_is_passed_through():
    cmd = command("ncu", "sm_90", "none", Path("p"), TARGET)
    assert cmd[cmd.index("--clock-control") + 1] == "none"


def test_hopper_command_requests_plain_tensor_names_and_gmma():
    metrics = _metrics_arg(command("ncu", "sm_90", "base", Path("p"), TARGET))
    assert "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" in metrics
    assert "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active" in metrics
    assert not any(m.startswith("launch__") for m in metrics)


def test_ada_command_requests_v2_tensor_names_and_no_gmma():
    metrics = _metrics_arg(command("ncu", "sm_89", "base", Path("p"), TARGET))
    assert "sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_active" in metrics
    assert "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active" not in metrics
    assert not any("gmma" in m for m in metrics)


def test_the_profile_asks_for_the_source_counters_section():
    cmd = command("ncu", "sm_90", "base", Path("p"), ["python", "t.py"])
    assert cmd[cmd.index("--section") + 1] == "SourceCounters"
    assert "--metrics" in cmd       # beside the gate metrics, in the same ncu session


def test_parse_ncu_version_reads_the_version_line():
    text = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n" \
           "Version 2025.3.1.0 (build 36398880) (public-release)"
    assert parse_version(text) == "2025.3.1.0"


def test_parse_ncu_version_of_nothing_is_empty():
    assert parse_version("") == ""
