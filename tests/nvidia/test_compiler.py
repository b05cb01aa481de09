"""Running a compiler (`gate.nvidia.compiler.run_tool`): a compile error is the run's output, and
a run the gate's memory limit ended says so (`ToolRun.out_of_memory`), by the compiler's words or
the kill."""

import shutil

import pytest

from gate.nvidia import compiler


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "kernels").mkdir()
    return tmp_path


def test_out_of_memory_is_read_from_the_compilers_words_or_a_kill(monkeypatch, tmp_path):
    class Proc:
        def __init__(self, rc, err):
            self.returncode, self.stdout, self.stderr = rc, "", err
    for rc, err, oom in [(1, "x.cu(3): catastrophic error: out of memory", True),
                         (-9, "", True), (1, "cc1plus: out of memory allocating 65536 bytes", True),
                         (1, "x.cu(3): error: identifier \"y\" is undefined", False), (0, "", False)]:
        monkeypatch.setattr(compiler.box, "run", lambda *a, **kw: Proc(rc, err))
        assert compiler.run_tool(["nvcc"], tmp_path, 10).out_of_memory is oom, err


@pytest.mark.nvcc
def test_real_nvcc_compile_error_is_reported_not_raised(repo):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH")
    (repo / "kernels" / "bad.cu").write_text("__global__ void k() { undeclared_name = 1; }\n")
    run = compiler.run_tool([nvcc, "-c", "kernels/bad.cu", "-o", "/dev/null"], cwd=repo, timeout_s=120)
    assert not run.ok
    assert "undeclared_name" in run.output
