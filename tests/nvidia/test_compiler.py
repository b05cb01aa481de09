"""Running a compiler (`gate.nvidia.compiler.run_tool`): a compile error is the run's output, and a
run the machine ended says which resource it lacked (`ToolRun.fault`), by the compiler's words or
its end, after one more try (issue 42)."""

import shutil

import pytest

from gate.nvidia import compiler


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "kernels").mkdir()
    return tmp_path


@pytest.fixture
def no_pause(monkeypatch):
    monkeypatch.setattr(compiler, "RETRY_PAUSE_S", 0)


class Proc:
    def __init__(self, rc, err):
        self.returncode, self.stdout, self.stderr = rc, "", err


@pytest.mark.parametrize("rc, err, fault", [
    (1, "x.cu(3): catastrophic error: out of memory", "memory"),
    (1, "cc1plus: out of memory allocating 65536 bytes", "memory"),
    (-9, "\nkilled: the box passed its memory cap (cgroup v2: ...)\n", "memory"),
    (-9, "", "a signal"),
    (1, "c++: fatal error: cannot execute '/usr/lib/gcc/x86_64-linux-gnu/12/collect2': vfork: Resource "
        "temporarily unavailable", "processes"),
    (1, "nvcc fatal   : Could not execute 'cicc'", "start"),
    (1, "x.cu: fatal error: error writing to /tmp/ccX.s: No space left on device", "disk space"),
    (1, "nvcc error   : 'cicc' died due to signal 11 (Invalid memory reference)", "a signal"),
    (1, "x.cu(3): error: identifier \"y\" is undefined", ""),
    (0, "", ""),
])
def test_the_resource_a_run_lacked_is_read_from_its_words_or_its_end(rc, err, fault, monkeypatch, tmp_path, no_pause):
    monkeypatch.setattr(compiler.box, "run", lambda *a, **kw: Proc(rc, err))
    run = compiler.run_tool(["nvcc"], tmp_path, 10)
    assert (run.ok, run.fault) == (rc == 0, fault)
    assert bool(run.limit) is bool(fault)


def test_a_run_the_machine_ended_is_tried_once_more_and_a_second_success_stands(monkeypatch, tmp_path, no_pause):
    answers = [Proc(1, "vfork: Resource temporarily unavailable"), Proc(0, "")]
    monkeypatch.setattr(compiler.box, "run", lambda *a, **kw: answers.pop(0))
    run = compiler.run_tool(["nvcc"], tmp_path, 10)
    assert run.ok and not run.fault and answers == []


def test_a_run_killed_twice_names_the_signal_and_the_retry(monkeypatch, tmp_path, no_pause):
    calls = []
    monkeypatch.setattr(compiler.box, "run", lambda *a, **kw: calls.append(a) or Proc(-9, ""))
    run = compiler.run_tool(["nvcc"], tmp_path, 10)
    assert len(calls) == 2 and run.fault == "a signal"
    assert "killed by SIGKILL" in run.limit and "twice" in run.limit


def test_a_diagnostic_about_the_source_is_not_retried(monkeypatch, tmp_path, no_pause):
    calls = []
    said = "x.cu(1): error: expected a ;"
    monkeypatch.setattr(compiler.box, "run", lambda *a, **kw: calls.append(a) or Proc(1, said))
    assert not compiler.run_tool(["nvcc"], tmp_path, 10).fault and len(calls) == 1


def test_the_host_compile_places_come_from_its_cores_and_memory(monkeypatch):
    monkeypatch.setattr(compiler.os, "cpu_count", lambda: 32)
    monkeypatch.setattr(compiler.os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096,
                                                               "SC_PHYS_PAGES": (100 << 30) // 4096}[name])
    monkeypatch.setattr(compiler.box, "COMPILE_MEMORY_GIB", 16)
    assert compiler.compile_slots() == 6          # 100 GiB / 16 GiB, below 32 cores
    monkeypatch.setattr(compiler.os, "cpu_count", lambda: 4)
    assert compiler.compile_slots() == 4


@pytest.mark.nvcc
def test_real_nvcc_compile_error_is_reported_not_raised(repo):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH")
    (repo / "kernels" / "bad.cu").write_text("__global__ void k() { undeclared_name = 1; }\n")
    run = compiler.run_tool([nvcc, "-c", "kernels/bad.cu", "-o", "/dev/null"], cwd=repo, timeout_s=120)
    assert not run.ok
    assert "undeclared_name" in run.output
