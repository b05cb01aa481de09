"""Candidate and baseline static compiles run side by side in one pool, each key once; a failed
compile is cached like a successful one, with its log (issue 26)."""

import shutil
import threading

import pytest

from gate.compiling import objects, static
from gate.compiling import toolchain as tc
from gate.compiling.build_cache import ObjectCache
from gate.compiling.compile_pool import CompilePool
from gate.domain import KernelSpec, Shape, StageStatus, StaticResult
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.nvidia import compiler
from gate.pipeline import run


def test_a_failed_compile_is_cached_with_its_log(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(compiler, "run_tool", lambda command, cwd, timeout_s: calls.append(command) or
                        compiler.ToolRun(False, "k.cu(3): error: identifier \"x\" is undefined"))
    cache = ObjectCache(tmp_path / "cache")
    first = objects.compile_object("k.cu", ["nvcc"], "ab" * 32, tmp_path, tmp_path / "out", cache, 60)
    again = objects.compile_object("k.cu", ["nvcc"], "ab" * 32, tmp_path, tmp_path / "out", cache, 60)
    assert len(calls) == 1
    assert (first.ok, first.hit, again.ok, again.hit) == (False, False, False, True)
    assert again.log == first.log and "is undefined" in again.log
    assert cache.get("ab" * 32) is None


def test_a_timed_out_compile_is_not_cached(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(compiler, "run_tool", lambda command, cwd, timeout_s: calls.append(command) or
                        compiler.ToolRun(False, "nvcc: timed out after 60 s", timed_out=True))
    cache = ObjectCache(tmp_path / "cache")
    for _ in range(2):
        objects.compile_object("k.cu", ["nvcc"], "cd" * 32, tmp_path, tmp_path / "out", cache, 60)
    assert len(calls) == 2 and cache.failure("cd" * 32) is None


def test_the_pool_runs_each_key_once():
    runs = []
    gate = threading.Event()

    def work():
        gate.wait(5)
        runs.append(1)
        return "object"
    with CompilePool(2) as pool:
        first, started = pool.submit("key", work)
        second, joined_started = pool.submit("key", work)
        gate.set()
        assert (first.result(), second.result()) == ("object", "object")
    assert (started, joined_started, len(runs)) == (True, False, 1)


def request(tmp_path) -> JobRequest:
    kernel = KernelSpec(name="k", sources=["k.cu"], workload="gemm", shapes=[Shape({"m": 16, "n": 16, "k": 16})])
    return JobRequest(kernel=kernel, candidate=Checkout("c" * 40, str(tmp_path / "cand")),
                      baseline=Checkout("b" * 40, str(tmp_path / "base")), artifacts_dir=str(tmp_path / "art"),
                      options=RunOptions(gpu_stages=False))


def test_the_two_sides_static_stages_run_at_the_same_time(tmp_path, monkeypatch):
    """Each side waits for the other at a barrier: one after the other, the first would time out."""
    barrier = threading.Barrier(2, timeout=10)
    pools = []

    def side(kernel, src_dir, out_dir, **kw):
        pools.append(kw["pool"])
        barrier.wait()
        return StaticResult(StageStatus.PASSED, reason=src_dir.name)
    monkeypatch.setattr(run.static, "run_static", side)
    events = []
    result = run.measure(request(tmp_path), events.append)
    assert (result.candidate.static.reason, result.baseline.static.reason) == ("cand", "base")
    assert pools[0] is pools[1]                          # one pool of the job's size for both sides
    assert {(e.side, e.state) for e in events if e.stage == "static"} == {
        ("candidate", "started"), ("candidate", "passed"), ("baseline", "started"), ("baseline", "passed")}


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
BROKEN = "__global__ void k(float* x) { x[threadIdx.x] = undefined_name; }\n"
GOOD = "__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n"


@needs_nvcc
@pytest.mark.nvcc
def test_shared_sources_compile_once_and_a_broken_one_fails_from_the_cache(tmp_path):
    """Candidate and baseline with the same broken source, side by side: nvcc runs once, both fail with
    the compiler's message, and a later job takes the failure from the cache."""
    for side in ("cand", "base"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "k.cu").write_text(BROKEN)
    spec = KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"])
    cache = tmp_path / "objects"
    compiled: list[str] = []
    with CompilePool(2) as pool:
        sides = {}
        threads = [threading.Thread(target=lambda s=s: sides.__setitem__(s, static.run_static(
            spec, tmp_path / s, tmp_path / "out" / s, cache_dir=cache, on_compiled=compiled.append, pool=pool)))
            for s in ("cand", "base")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(compiled) == 1, compiled                 # the other side joined the same compile
    for res in sides.values():
        assert res.status is StageStatus.FAILED and "undefined_name" in res.reason
    later = static.run_static(spec, tmp_path / "cand", tmp_path / "out" / "later", cache_dir=cache,
                              on_compiled=compiled.append)
    assert later.status is StageStatus.FAILED and "undefined_name" in later.reason
    assert len(compiled) == 1 and "(cached compile failure)" in later.log
    (tmp_path / "cand" / "k.cu").write_text(GOOD)       # a fixed source is a new key: compiled now
    fixed = static.run_static(spec, tmp_path / "cand", tmp_path / "out" / "fixed", cache_dir=cache)
    assert fixed.status is StageStatus.PASSED


def test_a_compile_stopped_by_the_gates_memory_limit_is_not_cached_and_not_the_sources_fault(tmp_path, monkeypatch):
    """cicc peaked at 9.0 GB on a CuTe flash attention: that used to read `reject: compile error`, cached."""
    calls = []
    monkeypatch.setattr(compiler, "run_tool", lambda command, cwd, timeout_s: calls.append(command) or compiler.ToolRun(
        False, "cute/layout.hpp(1003): catastrophic error: out of memory", fault="memory"))
    cache = ObjectCache(tmp_path / "cache")
    for _ in range(2):
        got = objects.compile_object("k.cu", ["nvcc"], "ef" * 32, tmp_path, tmp_path / "out", cache, 60)
    assert len(calls) == 2 and cache.failure("ef" * 32) is None
    assert "GATE_COMPILE_MEMORY_GIB" in got.limit and "not a fault of the source" in got.limit
