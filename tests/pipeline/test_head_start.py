"""The GPU stages' head start (issue 30): a kernel source without torch headers compiles while torch
is still being imported; the build's binding compiles in the job's pool from the start and the build
joins that compile; profile sessions started ahead and never used are killed with the job."""

import threading

from gate.compiling import build, objects, static
from gate.compiling import toolchain as tc
from gate.compiling.build_cache import Toolchain
from gate.compiling.compile_pool import CompilePool
from gate.domain import KernelSpec, StageStatus
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.nvidia import compiler
from gate.pipeline import ahead


class FakeTools:
    nvcc = "nvcc"
    versions = Toolchain("2.11", "13.0", "x")

    def nvcc_command(self, archs, name, uses_torch, extra=None):
        return ["nvcc", "-torch", *archs]

    def cxx_command(self, name, extra=None):
        return ["c++", "-torch"]

    def link_command(self, objs, output):
        return ["link", *objs, "-o", output]


def _fake_compiles(tmp_path, monkeypatch, compiled: list):
    obj = tmp_path / "obj.o"
    obj.write_bytes(b"\x7fELF")

    def compile_object(rel, command, key, src_dir, out_dir, cache, timeout_s, pch=None):
        compiled.append(rel)
        return objects.CompiledObject(rel, True, False, obj, "ptxas info    : Used 8 registers")
    monkeypatch.setattr(objects, "compile_object", compile_object)
    monkeypatch.setattr(tc, "nvcc_versions", lambda nvcc: Toolchain("none", "none", "x"))
    monkeypatch.setattr(compiler, "find_nvcc", lambda nvcc: "nvcc")
    monkeypatch.setattr(static.sass, "find_disassembler", lambda nvcc: None)


def test_a_source_without_torch_headers_compiles_while_torch_is_imported(tmp_path, monkeypatch):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    compiled: list = []
    _fake_compiles(tmp_path, monkeypatch, compiled)
    released = threading.Event()

    def slow_import(nvcc="nvcc", facts=None):
        assert released.wait(10)
        return FakeTools()
    monkeypatch.setattr(tc, "discover", slow_import)
    spec = KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"])
    res = static.run_static(spec, tmp_path, tmp_path / "out", cache_dir=tmp_path / "cache")
    assert res.status is StageStatus.PASSED and compiled == ["k.cu"]    # done without the import
    released.set()


def test_a_source_with_torch_headers_waits_for_torch_and_gets_its_flags(tmp_path, monkeypatch):
    (tmp_path / "k.cu").write_text("#include <torch/extension.h>\n__global__ void k() {}\n")
    compiled: list = []
    _fake_compiles(tmp_path, monkeypatch, compiled)
    monkeypatch.setattr(tc, "discover", lambda nvcc="nvcc", facts=None: FakeTools())
    res = static.run_static(KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"]), tmp_path, tmp_path / "out",
                            cache_dir=tmp_path / "cache")
    assert res.status is StageStatus.PASSED and "-torch" in res.log


def test_the_plain_object_has_one_key_in_the_static_stage_and_the_build(tmp_path, monkeypatch):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    monkeypatch.setattr(tc, "nvcc_versions", lambda nvcc: Toolchain("none", "none", "x"))
    static_key = objects.cu_job(tmp_path / "k.cu", "k.cu", tmp_path, ["sm_90"], "k", [], "nvcc", None)
    build_jobs = build.compile_jobs(KernelSpec(name="k", sources=["k.cu"]), tmp_path, FakeTools(), ["sm_90"])
    assert build_jobs == [("k.cu", *static_key)]


def _kernel_with_binding(tmp_path, monkeypatch) -> tuple[KernelSpec, list]:
    """A `.cu` and a torch binding, compiled by stand-ins; the list of sources compiled, as it grows."""
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "b.cpp").write_text("#include <torch/extension.h>\n")
    compiled: list = []
    _fake_compiles(tmp_path, monkeypatch, compiled)
    monkeypatch.setattr(tc, "discover", lambda nvcc="nvcc", facts=None: FakeTools())
    monkeypatch.setattr(tc, "target_archs", lambda archs: ["sm_90"])
    monkeypatch.setattr(compiler, "run_tool", lambda command, cwd, timeout_s: compiler.ToolRun(True, ""))
    spec = KernelSpec(name="k", sources=["k.cu", "b.cpp"], arch=["sm_90"])
    return spec, compiled


def test_the_prefetched_binding_compiles_once_and_the_build_joins_it(tmp_path, monkeypatch):
    spec, compiled = _kernel_with_binding(tmp_path, monkeypatch)
    with CompilePool(2) as pool:
        build.prefetch(spec, tmp_path, tmp_path / "cache", tmp_path / "pre", pool)
        assert compiled == [] or compiled == ["b.cpp"]      # the binding only: the .cu is the static stage's
        res = build.build_extension(spec, tmp_path, tmp_path / "cache", tmp_path / "out", pool=pool)
    assert res.status is StageStatus.PASSED
    assert sorted(compiled) == ["b.cpp", "k.cu"]           # the binding once, though asked for twice


class _Session:
    def __init__(self, ready=True, serves=True):
        self.cancelled = False
        self.proc = type("P", (), {"pid": -1})()
        self._ready, self._serves = ready, serves
        self.asked: tuple = ()

    def cancel(self):
        self.cancelled = True

    def ready(self):
        return self._ready

    def serves(self, out_dir, ncu, arch, clock_control):
        self.asked = (out_dir, ncu, arch, clock_control)
        return self._serves and not self.cancelled


def _request(tmp_path, profile_baseline=True):
    kernel = KernelSpec(name="k", sources=["k.cu"])
    return JobRequest(kernel=kernel, candidate=Checkout("c" * 40, str(tmp_path / "cand")),
                      baseline=Checkout("b" * 40, str(tmp_path / "base")), artifacts_dir=str(tmp_path / "art"),
                      options=RunOptions(), profile_baseline=profile_baseline)


def _ahead_on_a_gpu(monkeypatch, early_arch: str):
    """Ahead on a pretend GPU machine; the sessions it starts, by checkout, with their arch."""
    import gate.profiling.profile as profile
    sessions: dict = {}
    monkeypatch.setattr(build, "prefetch", lambda *a, **kw: None)
    monkeypatch.setattr(ahead, "gpu_nodes", lambda: True)
    monkeypatch.setattr(ahead.ncu_cli, "find", lambda name: "/bin/ncu")
    monkeypatch.setattr(ahead, "common_arch", lambda: early_arch)
    monkeypatch.setattr(ahead, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(profile, "start_session", lambda out, options, arch: sessions.setdefault(
        out.parent.name, _Session()).__dict__.update(arch=arch, out_dir=out) or sessions[out.parent.name])
    return sessions


def test_sessions_started_ahead_and_not_taken_are_cancelled_with_the_job(tmp_path, monkeypatch):
    sessions = _ahead_on_a_gpu(monkeypatch, "sm_90")
    with CompilePool(1) as pool, ahead.Ahead(_request(tmp_path), pool, tmp_path / "cache", lambda: True) as early:
        taken = early.session("candidate")
    assert sorted(sessions) == ["baseline", "candidate"]
    assert taken is sessions["candidate"] and not taken.cancelled   # the profile stage runs or cancels its own
    assert sessions["baseline"].cancelled and early.sessions == {}


def test_sessions_start_before_the_childs_torch_import_when_nvidia_smi_names_the_arch(tmp_path, monkeypatch):
    sessions = _ahead_on_a_gpu(monkeypatch, "sm_90")
    seen_at_import = []
    with CompilePool(1) as pool, ahead.Ahead(_request(tmp_path, False), pool, tmp_path / "cache",
                                             lambda: seen_at_import.append(sorted(sessions)) or True) as early:
        early.session("candidate")
    assert seen_at_import == [["candidate"]]


def test_without_an_arch_from_nvidia_smi_the_sessions_wait_for_torch(tmp_path, monkeypatch):
    sessions = _ahead_on_a_gpu(monkeypatch, "")
    seen_at_import = []
    with CompilePool(1) as pool, ahead.Ahead(_request(tmp_path, False), pool, tmp_path / "cache",
                                             lambda: seen_at_import.append(sorted(sessions)) or True) as early:
        assert early.session("candidate") is sessions["candidate"]
    assert seen_at_import == [[]] and sessions["candidate"].arch == "sm_90"


def test_sessions_started_early_are_cancelled_when_the_gpu_stages_cannot_run(tmp_path, monkeypatch):
    sessions = _ahead_on_a_gpu(monkeypatch, "sm_90")
    with CompilePool(1) as pool, ahead.Ahead(_request(tmp_path), pool, tmp_path / "cache", lambda: False) as early:
        assert early.session("candidate") is None
    assert all(s.cancelled for s in sessions.values()) and early.note == "no GPU stages here"


def test_nothing_starts_ahead_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "prefetch", lambda *a, **kw: (_ for _ in ()).throw(AssertionError("prefetched")))
    request = JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]), candidate=Checkout("c" * 40, str(tmp_path)),
                         baseline=None, artifacts_dir=str(tmp_path / "art"), options=RunOptions())
    with CompilePool(1) as pool, ahead.Ahead(request, pool, tmp_path / "cache", lambda: False) as early:
        assert early.session("candidate") is None
    assert early.note == "no GPU stages here"


def test_group_pids_finds_this_process_in_its_group():
    import os
    assert os.getpid() in ahead.group_pids(os.getpgid(0))


def test_the_bench_waits_for_ready_sessions_and_drops_one_still_loading(tmp_path):
    request = JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]), candidate=Checkout("c" * 40, str(tmp_path)),
                         baseline=None, artifacts_dir=str(tmp_path / "art"), options=RunOptions(gpu_stages=False))
    with CompilePool(1) as pool, ahead.Ahead(request, pool, tmp_path / "cache", lambda: False) as early:
        up, loading, died = _Session(True), _Session(None), _Session(False)
        early.sessions.update({"candidate": up, "baseline": loading, "other": died})
        early.wait_ready(timeout_s=0.05)
        assert early.sessions == {"candidate": up}          # a context still being made never meets the bench
        assert loading.cancelled and died.cancelled and not up.cancelled


def test_the_build_counts_the_static_stages_object_as_a_hit_and_the_prefetched_binding_as_compiled(tmp_path, monkeypatch):
    """Joining a flight is not compiling: the `.cu` the static stage made is a hit for the build, as
    the object cache gave it before the pool was shared; the binding `prefetch` compiled is the build's."""
    spec, compiled = _kernel_with_binding(tmp_path, monkeypatch)
    with CompilePool(2) as pool:
        build.prefetch(spec, tmp_path, tmp_path / "cache", tmp_path / "pre", pool)
        static.run_static(spec, tmp_path, tmp_path / "static", cache_dir=tmp_path / "cache", pool=pool)
        res = build.build_extension(spec, tmp_path, tmp_path / "cache", tmp_path / "out", pool=pool)
    assert (res.cache_hits, res.cache_misses) == (1, 1), res.reason
    assert sorted(compiled) == ["b.cpp", "k.cu"]


def test_a_session_started_before_the_job_is_taken_where_it_serves_and_the_rest_cancelled(tmp_path, monkeypatch):
    """A spare child's sessions (`ahead.start_early`): the candidate's serves its job and is taken, no
    new one started; the baseline's is cancelled, as this job does not profile its baseline."""
    sessions = _ahead_on_a_gpu(monkeypatch, "sm_90")
    before = {"candidate": _Session(), "baseline": _Session()}
    ahead._early.update(before)
    with CompilePool(1) as pool, ahead.Ahead(_request(tmp_path, False), pool, tmp_path / "cache", lambda: True) as early:
        taken = early.session("candidate")
    assert taken is before["candidate"] and not taken.cancelled and sessions == {}
    assert taken.asked == (tmp_path / "art" / "candidate" / "profile", "/bin/ncu", "sm_90", "base")
    assert before["baseline"].cancelled and ahead._early == {}


def test_a_session_started_before_the_job_that_does_not_serve_it_is_replaced(tmp_path, monkeypatch):
    sessions = _ahead_on_a_gpu(monkeypatch, "sm_90")
    stale = _Session(serves=False)              # another ncu, arch or clock control, or it ended waiting
    ahead._early.update({"candidate": stale})
    with CompilePool(1) as pool, ahead.Ahead(_request(tmp_path, False), pool, tmp_path / "cache", lambda: True) as early:
        assert early.session("candidate") is sessions["candidate"]
    assert stale.cancelled


def test_start_early_starts_both_sides_in_the_folders_their_profile_stages_use(tmp_path, monkeypatch):
    sessions = _ahead_on_a_gpu(monkeypatch, "sm_90")
    ahead.start_early(RunOptions(), tmp_path / "box")
    try:
        assert ahead._early == {"candidate": sessions["candidate"], "baseline": sessions["baseline"]}
        assert sessions["candidate"].out_dir == tmp_path / "box" / "candidate" / "profile"
    finally:
        ahead._early.clear()
    ahead.start_early(RunOptions(profile=False), tmp_path / "box")
    assert ahead._early == {}
