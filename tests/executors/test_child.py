"""The parent side of the GPU child, with stand-in children that crash, hang or fail on purpose."""

import json
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gate.domain import KernelSpec, StageStatus
from gate.domain.job import Checkout, JobRequest
from gate.errors import RunnerError, ToolMissingError
from gate.domain.child_protocol import RESULT_NAME, ExitCode
from gate.executors.child import run_child

PRELUDE = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    def event(stage, state, side="candidate"):
        print(json.dumps({"type": "progress", "stage": stage, "side": side, "state": state}), flush=True)
""")


def make_request(tmp_path) -> JobRequest:
    return JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]), candidate=Checkout("c" * 40, str(tmp_path)),
                      baseline=Checkout("b" * 40, str(tmp_path)), artifacts_dir=str(tmp_path / "art"))


def child(script: str) -> list[str]:
    return [sys.executable, "-c", PRELUDE + textwrap.dedent(script)]


def test_a_segfault_inside_a_stage_fails_that_stage_with_the_signal(tmp_path):
    events = []
    result = run_child(make_request(tmp_path), 30, events.append, command=child("""
        event("static", "started"); event("static", "passed")
        event("correctness", "started")
        print("CUDA error: an illegal memory access was encountered", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """))
    assert [(e.stage, e.state) for e in events] == [("static", "started"), ("static", "passed"),
                                                    ("correctness", "started")]
    failed = result.candidate.correctness
    assert failed.status is StageStatus.FAILED
    assert "killed by SIGSEGV during correctness (candidate)" in failed.reason
    assert "illegal memory access" in failed.reason
    assert "illegal memory access" in result.notes[-1]


def test_a_crash_after_a_step_inside_a_stage_still_fails_that_stage(tmp_path):
    """`running` events (a source compiled) keep the stage running; the crash is still charged to it."""
    result = run_child(make_request(tmp_path), 30, None, command=child("""
        event("static", "started"); event("static", "running")
        os.kill(os.getpid(), signal.SIGSEGV)
    """))
    assert result.candidate.static.status is StageStatus.FAILED
    assert "killed by SIGSEGV during static (candidate)" in result.candidate.static.reason


TIMEOUT_S = 4


def test_a_hang_is_killed_with_its_process_group_and_keeps_the_checkpoint(tmp_path):
    request = make_request(tmp_path)
    result_path = tmp_path / "art" / RESULT_NAME
    marker = f"{time.time():.6f}"       # the grandchild's pid is the box's own: find it by its argv
    checkpoint = ('{"kernel": "k", "candidate": {"sha": "%s", "static": {"status": "passed", "reason": "ok"}}}'
                  % ("c" * 40))
    started = time.monotonic()
    alive_at_start = []                 # the grandchild runs when the stage starts (else no proof)
    # The order is synchronised on what the processes write, never on time: the checkpoint is on disk
    # before the grandchild starts, and the stage starts only once the grandchild has printed from its
    # own code. Popen returning is not enough: it returns when exec closed the close-on-exec pipe,
    # before the kernel publishes the new argv, and /proc/<pid>/cmdline read empty in 3 runs of 30.
    # The only time left is the timeout: the child reaches its stage in 0.07-0.19 s on an idle
    # 2-core machine, a twentieth of it.
    result = run_child(request, TIMEOUT_S, lambda _e: alive_at_start.append(bool(_pids_with_arg(marker))),
                       command=child(f"""
        with open({str(result_path)!r}, "w") as f:
            f.write({checkpoint!r})
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)",
                                       {marker!r}], stdout=subprocess.PIPE, text=True)
        assert grandchild.stdout.readline() == "up\\n"
        event("bench", "started", side="joint")
        time.sleep(60)
    """))
    assert time.monotonic() - started < 60        # the child's own sleep: it was killed, not waited for
    assert result.candidate.static.status is StageStatus.PASSED        # kept from the checkpoint
    assert result.bench.status is StageStatus.FAILED
    assert f"timed out after {TIMEOUT_S} s during bench" in result.bench.reason
    assert alive_at_start == [True]
    assert not [pid for pid in _pids_with_arg(marker) if running(pid)]


def _pids_with_arg(arg: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if arg.encode() in cmdline.read_bytes().split(b"\0"):
                pids.append(int(cmdline.parent.name))
        except OSError:
            pass
    return pids


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait for a reaper that never comes in a container)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return False
        except FileNotFoundError:
            return False
        time.sleep(0.1)
    return True


def test_a_child_that_dies_before_any_stage_is_a_runner_error(tmp_path):
    with pytest.raises(RunnerError, match="outside any stage: boom"):
        run_child(make_request(tmp_path), 30, None, command=child("""
            print("boom", file=sys.stderr); sys.exit(1)
        """))


def test_a_gate_error_in_the_child_is_raised_as_the_same_class(tmp_path):
    with pytest.raises(ToolMissingError, match="ncu not found"):
        run_child(make_request(tmp_path), 30, None, command=child(f"""
            print(json.dumps({{"type": "error", "error": "ToolMissingError", "message": "ncu not found"}}))
            sys.exit({int(ExitCode.GATE_ERROR)})
        """))


def test_an_internal_error_is_a_runner_error_not_a_kernel_fault(tmp_path):
    with pytest.raises(RunnerError, match="ZeroDivisionError"):
        run_child(make_request(tmp_path), 30, None, command=child(f"""
            event("bench", "started", side="joint")
            print("ZeroDivisionError: division by zero", file=sys.stderr)
            sys.exit({int(ExitCode.INTERNAL)})
        """))


def test_stray_stdout_lines_do_not_break_the_event_stream(tmp_path):
    result_path = tmp_path / "art" / RESULT_NAME
    events = []
    result = run_child(make_request(tmp_path), 30, events.append, command=child(f"""
        print("[1/3] c++ -c binding.cpp", flush=True)
        event("static", "started"); event("static", "passed")
        open({str(result_path)!r}, "w").write('{{"kernel": "k", "candidate": {{"sha": "x"}}}}')
    """))
    assert result.kernel == "k"
    assert len(events) == 2


def test_the_child_runs_boxed_without_the_data_dir_the_network_or_a_writable_checkout(tmp_path, monkeypatch):
    """Issue 12: the GPU child runs the repository's code; it sees its checkout read-only, writes only
    its artifacts, and the data dir (database, mirrors, other jobs) is not there."""
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setenv("GATE_GITHUB_TOKEN", "ghp_secret")
    data_dir = tmp_path / "data"
    (data_dir / "mirrors").mkdir(parents=True)
    (data_dir / "gate.db").write_text("the database")
    checkout = data_dir / "workspaces" / "job" / "candidate"
    checkout.mkdir(parents=True)
    request = JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]), candidate=Checkout("c" * 40, str(checkout)),
                         artifacts_dir=str(data_dir / "artifacts" / "job"))
    result_path = data_dir / "artifacts" / "job" / RESULT_NAME
    result = run_child(request, 30, None, hidden=(data_dir,), command=child(f"""
        seen = dict(db=os.path.exists({str(data_dir / 'gate.db')!r}), mirrors=os.path.exists({str(data_dir / 'mirrors')!r}),
                    token="ghp_secret" in str(os.environ), uid=os.getuid())
        try:
            open({str(checkout / 'planted.py')!r}, "w")
            seen["checkout_writable"] = True
        except OSError:
            seen["checkout_writable"] = False
        import socket
        try:
            socket.create_connection(("1.1.1.1", 443), timeout=2)
            seen["network"] = True
        except OSError:
            seen["network"] = False
        open({str(result_path)!r}, "w").write(json.dumps({{"kernel": "k", "candidate": {{"sha": "c"}},
                                                          "notes": [json.dumps(seen)]}}))
    """))
    seen = json.loads(result.notes[-1])   # notes[0] says what bounded the box's memory
    assert seen == {"db": False, "mirrors": False, "token": False, "uid": seen["uid"],
                    "checkout_writable": False, "network": False}
    assert seen["uid"] != 0


def test_a_child_printing_100_mib_without_a_newline_costs_the_parent_bounded_memory(tmp_path):
    """The kernel's output reaches the parent (the server, with the local executor). Failed before
    (the whole line read, ~200 MiB), passes now (pieces of MAX_LINE_CHARS, a tail of them)."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = run_child(make_request(tmp_path), 60, None, command=child("""
            event("correctness", "started")
            chunk = "x" * (1 << 20)
            for _ in range(100):
                sys.stderr.write(chunk)
            sys.stderr.flush()
            sys.exit(3)
        """))
        peak_mib = tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()
    assert peak_mib < 16
    assert result.candidate.correctness.status is StageStatus.FAILED
    assert "exited with code 3 during correctness" in result.candidate.correctness.reason


def test_an_abort_while_loading_the_baseline_keeps_the_candidates_own_build_result(tmp_path):
    """A baseline whose import aborts the child that shares it with the candidate (an initialiser
    that aborts for its own reasons; two builds of one TORCH_LIBRARY namespace no longer meet there:
    the baseline goes to a side host, tests/pipeline/test_run_measure.py). The candidate's build
    result, saved before, stays; the baseline's build fails naming the step."""
    result_file = tmp_path / "art" / RESULT_NAME
    result = run_child(make_request(tmp_path), 30, None, command=child(f"""
        from gate.domain import BuildResult, JobResult, SideResults, StageStatus
        from gate.domain.child_protocol import write_result
        from pathlib import Path
        event("build", "started")
        cand = BuildResult(StageStatus.FAILED, reason="the built module does not import: undefined symbol: f")
        print(json.dumps({{"type": "progress", "stage": "build", "side": "candidate", "state": "failed"}}), flush=True)
        write_result(Path({str(result_file)!r}), JobResult(kernel="k", candidate=SideResults(sha="c" * 40, build=cand),
                                                           baseline=SideResults(sha="b" * 40)))
        event("build", "started", side="baseline")
        print(json.dumps({{"type": "progress", "stage": "build", "side": "baseline", "state": "running",
                          "detail": "loading the built module"}}), flush=True)
        print("terminate called: Only a single TORCH_LIBRARY can be used to register the namespace ops",
              file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGABRT)
    """))
    assert result.candidate.build.status is StageStatus.FAILED
    assert "undefined symbol: f" in result.candidate.build.reason
    assert result.baseline.build.status is StageStatus.FAILED
    assert "killed by SIGABRT during build (baseline, loading the built module)" in result.baseline.build.reason
    assert "Only a single TORCH_LIBRARY" in result.baseline.build.reason


def test_a_finished_steps_detail_is_not_blamed_for_the_crash(tmp_path):
    """'k.cu for sm_90: compiled in 3 s' names a step that is done: the crash is the stage's, no more."""
    result = run_child(make_request(tmp_path), 30, None, command=child("""
        event("static", "started")
        print(json.dumps({"type": "progress", "stage": "static", "side": "candidate", "state": "running",
                          "detail": "k.cu for sm_90: compiled in 3 s (1 of 2)"}), flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """))
    assert "killed by SIGSEGV during static (candidate):" in result.candidate.static.reason


def test_a_child_that_exits_while_the_bench_captures_graphs_says_so_in_the_bench_row(tmp_path):
    """A CuTe repository's call synchronises the device; under capture that is refused, and its own
    error check calls exit(1) (`CUDA_CHECK ... operation not permitted when stream is capturing`). The
    bench's row names the step, which `executors.job.died_capturing` reads to run the job again."""
    from gate.executors.job import died_capturing

    result = run_child(make_request(tmp_path), 30, None, command=child("""
        event("bench", "started", side="joint")
        print(json.dumps({"type": "progress", "stage": "bench", "side": "joint", "state": "running",
                          "detail": "capturing CUDA graphs"}), flush=True)
        print("CUDA_CHECK error in line 817: operation not permitted when stream is capturing", file=sys.stderr)
        sys.exit(1)
    """))
    assert result.bench.status is StageStatus.FAILED
    assert "during bench (joint, capturing CUDA graphs)" in result.bench.reason
    assert "operation not permitted when stream is capturing" in died_capturing(result)


def test_a_child_that_exits_while_timing_after_its_captures_is_the_kernels_fault(tmp_path):
    from gate.executors.job import died_capturing

    result = run_child(make_request(tmp_path), 30, None, command=child("""
        event("bench", "started", side="joint")
        for step in ("capturing CUDA graphs", "timing"):
            print(json.dumps({"type": "progress", "stage": "bench", "side": "joint", "state": "running",
                              "detail": step}), flush=True)
        sys.exit(1)
    """))
    assert result.bench.status is StageStatus.FAILED and "capturing" not in result.bench.reason
    assert died_capturing(result) is None
