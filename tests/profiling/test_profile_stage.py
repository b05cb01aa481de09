"""The profile stage's plumbing without a GPU: a stand-in `ncu` that behaves like the real one.

The stand-in writes what the real ncu and profile target would leave behind (the target's status
file, a recorded H200 report, ncu's console lines), so everything around ncu is exercised.
"""

import json
import os
import signal
import stat
import sys
import time
from pathlib import Path

import pytest

from gate.domain import KernelSpec, Shape, StageStatus
from gate.domain.job import RunOptions
from gate.errors import ProfilerError, ToolMissingError
from gate.profiling.profile import profile, start_session

FAKE_NCU = r'''#!{python}
import json, os, shutil, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 36398880) (public-release)")
    sys.exit(0)
with open(os.environ["FAKE_NCU_ARGS"], "w") as f:
    json.dump(args, f)
mode = os.environ["FAKE_NCU_MODE"]
spec = json.load(open(args[-1]))
if "go_path" in spec:                    # as the real target: nothing before the go file names the module
    import time
    while not os.path.exists(spec["go_path"]):
        time.sleep(0.005)
    spec.update(json.load(open(spec["go_path"])))
json.dump(spec, open(os.environ["FAKE_NCU_ARGS"] + ".spec", "w"))
regions = [[s, "float16"] for s in ("b1_h8_s512_d64",)]
def status(s, detail=""):
    json.dump({{"status": s, "detail": detail, "regions": regions}}, open(spec["status_path"], "w"))
if mode == "perm":
    print("==PROF== Connected to process 99")
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0.")
    sys.exit(1)
if mode == "nokernels":
    status("ok")
    print("==WARNING== No kernels were profiled.")
    sys.exit(0)
if mode == "fault":
    status("kernel_fault", "RuntimeError: CUDA error: an illegal memory access was encountered")
    print("==ERROR== The application returned an error code (3).")
    sys.exit(3)
status("ok")
shutil.copy(os.environ["FAKE_NCU_REPORT"], args[args.index("-o") + 1] + ".ncu-rep")
print("==PROF== Disconnected from process 99")
'''


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch, ncu_fixture) -> Path:
    exe = tmp_path / "bin" / "ncu"
    exe.parent.mkdir()
    exe.write_text(FAKE_NCU.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE_NCU_ARGS", str(tmp_path / "args.json"))
    monkeypatch.setenv("FAKE_NCU_REPORT", str(ncu_fixture("h200-sdpa-gate-metrics.ncu-rep")))
    return exe


KERNEL = KernelSpec(name="attn", sources=["k.cu"], shapes=[Shape({"b": 1, "h": 8, "s": 512, "d": 64})])


def _profile(tmp_path: Path, ncu: Path, mode: str, monkeypatch) -> object:
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    return profile(KERNEL, str(tmp_path / "ext.so"), tmp_path, tmp_path / "out",
                   RunOptions(ncu_path=str(ncu)), arch="sm_90")


def test_profile_reads_the_report_ncu_wrote(tmp_path, fake_ncu, monkeypatch):
    result = _profile(tmp_path, fake_ncu, "report", monkeypatch)
    assert result.status == StageStatus.PASSED
    assert len(result.kernels) == 4 and result.ncu_version == "2025.3.1.0"
    assert Path(result.report_path).is_file() and result.report_path.startswith(str(tmp_path / "out"))
    assert "up to 10 replay passes" in result.reason
    assert "n/a on this GPU/ncu" in result.reason and "smsp__sass_inst_executed_op_local_ld.sum" in result.reason
    assert [k.shape for k in result.kernels] == ["b1_h8_s512_d64"] * 4   # one region: launch order
    assert (tmp_path / "out" / "ncu.log").read_text().startswith("==PROF==")


def test_profile_runs_ncu_on_the_profile_target_with_this_arch(tmp_path, fake_ncu, monkeypatch):
    _profile(tmp_path, fake_ncu, "report", monkeypatch)
    import json
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[-3:-1] == ["-m", "gate.profiling.profile_target"]
    assert "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active" in args[args.index("--metrics") + 1]
    spec = json.loads((tmp_path / "args.json.spec").read_text())
    assert spec["kernel"]["name"] == "attn" and spec["module_path"].endswith("ext.so")


def test_a_session_started_ahead_waits_for_its_go_and_then_profiles(tmp_path, fake_ncu, monkeypatch):
    """The session loads while the job's other stages run; the target sees the module only at go."""
    monkeypatch.setenv("FAKE_NCU_MODE", "report")
    options = RunOptions(ncu_path=str(fake_ncu))
    session = start_session(tmp_path / "out", options, arch="sm_90")
    time.sleep(0.3)
    assert session.proc.poll() is None                       # still waiting
    assert not (tmp_path / "args.json.spec").exists() and not session.status_path.exists()
    res = profile(KERNEL, str(tmp_path / "later.so"), tmp_path, tmp_path / "out", options, session=session)
    assert res.status is StageStatus.PASSED and res.kernels
    assert json.loads((tmp_path / "args.json.spec").read_text())["module_path"].endswith("later.so")


def test_a_session_never_asked_for_is_killed_with_its_reader(tmp_path, fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "report")
    session = start_session(tmp_path / "out", RunOptions(ncu_path=str(fake_ncu)), arch="sm_90")
    session.cancel()
    assert session.proc.returncode == -signal.SIGKILL and session.reader.proc.poll() is not None
    assert not (tmp_path / "args.json.spec").exists()


def test_profile_permission_error_raises_profiler_error(tmp_path, fake_ncu, monkeypatch):
    with pytest.raises(ProfilerError, match="ERR_NVGPUCTRPERM"):
        _profile(tmp_path, fake_ncu, "perm", monkeypatch)


def test_profile_of_a_function_that_launches_nothing_fails(tmp_path, fake_ncu, monkeypatch):
    result = _profile(tmp_path, fake_ncu, "nokernels", monkeypatch)
    assert result.status == StageStatus.FAILED and "launched no CUDA kernel" in result.reason


def test_profile_of_a_faulting_kernel_fails_with_the_evidence(tmp_path, fake_ncu, monkeypatch):
    result = _profile(tmp_path, fake_ncu, "fault", monkeypatch)
    assert result.status == StageStatus.FAILED and "illegal memory access" in result.reason


def test_profile_without_ncu_raises_tool_missing(tmp_path):
    options = RunOptions(ncu_path=str(tmp_path / "no-such-ncu"))
    with pytest.raises(ToolMissingError, match="no-such-ncu"):
        profile(KERNEL, "ext.so", tmp_path, tmp_path / "out", options, arch="sm_90")


def test_profile_on_an_arch_without_catalog_raises_before_running_ncu(tmp_path, fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "report")
    with pytest.raises(ProfilerError, match="sm_75"):
        profile(KERNEL, "ext.so", tmp_path, tmp_path / "out", RunOptions(ncu_path=str(fake_ncu)), arch="sm_75")
    assert not os.path.exists(tmp_path / "args.json")
