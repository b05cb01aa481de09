"""The gate's own failures are never a kernel's fault (issue 42): a compiler that could not start,
could not fork (`vfork: Resource temporarily unavailable`), was killed, or found the disk full is
tried once more, then its stage ends `error` naming the resource; nothing is cached, so the next
job compiles afresh. A diagnostic about the source is still the kernel's (`reject`) and cached.

A stand-in nvcc (a script, run in the real box) reads what to do from a file beside it and counts
its compiles in the folder it writes its object to."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gate.compiling import build, static
from gate.domain import Gates, KernelSpec, StageStatus, Verdict
from gate.domain.results import JobResult, SideResults
from gate.nvidia import compiler
from gate.verdict.decide import decide

NVCC = '''#!{python}
import os, signal, sys
here = os.path.dirname(os.path.abspath(__file__))
if "--version" in sys.argv:
    print("nvcc: stand-in\\nCuda compilation tools, release 13.0, V13.0.88")
    sys.exit(0)
out = sys.argv[sys.argv.index("-o") + 1]
with open(os.path.join(os.path.dirname(out), "calls"), "a") as calls:
    calls.write("1\\n")
mode = open(os.path.join(here, "mode")).read().strip()
if mode == "ok":
    open(out, "wb").write(b"object")
    print("ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'")
    print("ptxas info    : Used 8 registers, 0 bytes smem")
    sys.exit(0)
if mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
print({{"start": "c++: fatal error: cannot execute 'cc1plus': execvp: No such file or directory",
       "vfork": "c++: fatal error: cannot execute '/usr/lib/gcc/x86_64-linux-gnu/12/collect2': "
                "vfork: Resource temporarily unavailable",
       "enospc": "k.cu: fatal error: error writing to /tmp/tmpxft_0001.cpp: No space left on device",
       "syntax": 'k.cu(1): error: expected a ";"'}}[mode], file=sys.stderr)
sys.exit(1)
'''


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """(nvcc, set its mode, its compiles so far, run the static stage): the stand-in and its repo."""
    monkeypatch.setattr(compiler, "RETRY_PAUSE_S", 0)
    tools = tmp_path / "tools"
    tools.mkdir()
    nvcc = tools / "nvcc"
    nvcc.write_text(NVCC.format(python=sys.executable))
    nvcc.chmod(0o755)
    repo, out = tmp_path / "repo", tmp_path / "out"
    repo.mkdir()
    (repo / "k.cu").write_text("__global__ void k() {}\n")
    kernel = KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"], timeout_s=60)
    lines: list[str] = []

    def run() -> static.StaticResult:
        return static.run_static(kernel, repo, out, nvcc=str(nvcc), cache_dir=tmp_path / "cache",
                                 on_compiled=lines.append)

    def calls() -> int:
        return sum(len(p.read_text().split()) for p in out.rglob("calls"))

    return SimpleNamespace(mode=lambda m: (tools / "mode").write_text(m), calls=calls, run=run, lines=lines,
                           failures=lambda: list((tmp_path / "cache").rglob("*.failed.log")))


@pytest.mark.parametrize("mode, named", [
    ("start", "could not be started"), ("vfork", "could not start a process"),
    ("sigkill", "was killed by a signal"), ("enospc", "ran out of disk space"),
])
def test_a_compiler_the_machine_stopped_ends_error_naming_it_uncached_and_the_next_job_compiles(stand_in, mode, named):
    stand_in.mode(mode)
    res = stand_in.run()
    assert res.status is StageStatus.ERROR and named in res.reason, res.reason
    assert stand_in.calls() == 2                                  # tried once more
    assert stand_in.failures() == []                              # nothing remembered as the source's
    assert not any("compile error" in line for line in stand_in.lines), stand_in.lines
    verdict = decide(JobResult(kernel="k", candidate=SideResults(sha="c" * 40, static=res)), Gates())
    assert verdict.verdict is Verdict.ERROR and named in verdict.reason
    stand_in.mode("ok")
    again = stand_in.run()                                        # the next job: compiled afresh
    assert again.status is StageStatus.PASSED and stand_in.calls() == 3


def test_a_syntax_error_is_still_the_kernels_and_is_remembered(stand_in):
    stand_in.mode("syntax")
    res = stand_in.run()
    assert res.status is StageStatus.FAILED and 'expected a ";"' in res.reason
    assert stand_in.calls() == 1 and len(stand_in.failures()) == 1
    verdict = decide(JobResult(kernel="k", candidate=SideResults(sha="c" * 40, static=res)), Gates())
    assert verdict.verdict is Verdict.REJECT
    stand_in.mode("ok")
    again = stand_in.run()                                        # same source, same toolchain: the same failure
    assert again.status is StageStatus.FAILED and stand_in.calls() == 1
    assert "(cached compile failure)" in again.log


def test_a_link_the_machine_stopped_is_the_builds_error_not_a_link_error(tmp_path, monkeypatch):
    """The issue's `reject: build: link error`, whose log read `cannot execute '.../collect2': vfork:
    Resource temporarily unavailable`."""
    monkeypatch.setattr(build.tc, "discover", lambda *a: SimpleNamespace(
        link_command=lambda objects, out: ["c++", "-shared", *objects, "-o", out]))
    monkeypatch.setattr(build.tc, "target_archs", lambda archs: ["sm_90"])
    monkeypatch.setattr(build, "compile_jobs", lambda *a: [])
    said = "c++: fatal error: cannot execute 'collect2': vfork: Resource temporarily unavailable"
    monkeypatch.setattr(build.compiler, "run_tool", lambda *a, **kw: compiler.ToolRun(False, said, fault="processes"))
    res = build.build_extension(KernelSpec(name="k", sources=[], module="k"), tmp_path, tmp_path / "cache",
                                tmp_path / "o")
    assert res.status is StageStatus.ERROR and res.reason.startswith("link: the compiler could not start a process")
    assert "Resource temporarily unavailable" in res.reason


def test_the_object_key_names_the_compiler_and_the_host_compiler(monkeypatch):
    from gate.compiling import toolchain

    asked = []
    monkeypatch.setattr(toolchain.compiler, "version", lambda command: asked.append(command[0]) or f"{command[0]} 1.0")
    monkeypatch.setattr(toolchain.compiler, "find_host_compiler", lambda: "/usr/bin/c++")
    toolchain.nvcc_versions.cache_clear()
    try:
        versions = toolchain.nvcc_versions("/opt/cuda/bin/nvcc")
    finally:
        toolchain.nvcc_versions.cache_clear()
    assert versions.compiler_version == "/opt/cuda/bin/nvcc 1.0\n/usr/bin/c++ 1.0"
    assert sorted(Path(a).name for a in asked) == ["c++", "nvcc"]
