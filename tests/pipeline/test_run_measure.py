"""`measure` orders the stages; the stage modules are replaced by fakes (no GPU, no nvcc here)."""

import sys
import types

import pytest

import gate.checking
import gate.compiling
import gate.nvidia
import gate.profiling
import gate.timing
from gate.domain import (
    BenchResult,
    BuildResult,
    CorrectnessResult,
    Fingerprint,
    KernelSpec,
    ProfileResult,
    Shape,
    StageStatus,
    StaticResult,
)
from gate.checking.workloads import get_workload
from gate.domain.job import LOADING_MODULE, Checkout, JobRequest
from gate.domain.verdict import Verdict
from gate.errors import ToolMissingError
from gate.pipeline import run
from gate.verdict.decide import decide

P = StageStatus.PASSED


# Where each stage module the fakes replace lives (`run` imports them from their packages).
STAGE_PACKAGES = {"build": gate.compiling, "workloads": gate.checking, "correctness": gate.checking,
                  "bench": gate.timing, "pinned": gate.timing, "profile": gate.profiling, "fingerprint": gate.nvidia}


def request(tmp_path, baseline=True) -> JobRequest:
    kernel = KernelSpec(name="k", sources=["k.cu"], workload="gemm", shapes=[Shape({"m": 16, "n": 16, "k": 16})])
    return JobRequest(kernel=kernel, candidate=Checkout("c" * 40, str(tmp_path / "cand")),
                      baseline=Checkout("b" * 40, str(tmp_path / "base")) if baseline else None,
                      artifacts_dir=str(tmp_path / "art"))


@pytest.fixture
def static_passes(monkeypatch):
    monkeypatch.setattr(run.static, "run_static", lambda *a, **kw: StaticResult(P, reason="ok"))


def test_without_a_gpu_the_gpu_stages_are_not_run_with_the_reason(tmp_path, monkeypatch, static_passes):
    monkeypatch.setattr(run, "cuda_available", lambda: False)
    events, checkpoints = [], []
    result = run.measure(request(tmp_path), events.append, checkpoint=checkpoints.append)
    for stage in (result.candidate.build, result.candidate.correctness, result.bench, result.candidate.profile):
        assert (stage.status, stage.reason) == (StageStatus.NOT_RUN, "not run: no CUDA device")
    assert [(e.stage, e.side, e.state) for e in events] == [
        ("static", "candidate", "started"), ("static", "candidate", "passed"),
        ("static", "baseline", "started"), ("static", "baseline", "passed"),   # for the static delta
        ("build", "candidate", "not_run"), ("correctness", "candidate", "not_run"),
        ("bench", "joint", "not_run"), ("profile", "candidate", "not_run")]
    assert result.baseline.static.status is StageStatus.PASSED
    assert checkpoints and checkpoints[-1] is result


def test_a_compile_failure_skips_the_gpu_stages(tmp_path, monkeypatch):
    monkeypatch.setattr(run.static, "run_static", lambda *a, **kw: StaticResult(StageStatus.FAILED, reason="err"))
    monkeypatch.setattr(run, "cuda_available", lambda: pytest.fail("no GPU probe after a compile failure"))
    result = run.measure(request(tmp_path), lambda e: None)
    assert result.candidate.build.reason == "not run: static compile failed"


def test_a_missing_tool_is_a_stage_error_not_a_crash(tmp_path, monkeypatch):
    def missing(*a, **kw):
        raise ToolMissingError("nvcc not found")
    monkeypatch.setattr(run.static, "run_static", missing)
    monkeypatch.setattr(run, "cuda_available", lambda: False)
    result = run.measure(request(tmp_path), lambda e: None)
    assert result.candidate.static.status is StageStatus.ERROR
    assert "nvcc not found" in result.candidate.static.reason


@pytest.fixture
def fake_gpu(monkeypatch, static_passes):
    """Fake GPU stage modules recording the order in which they are called."""
    calls = []
    fake_build_args = []
    kept: list = []
    pinned_at: list = []                 # how many stage calls had run when the timer was pinned
    paced: list = []                     # per bench: whether every repetition was to be synchronous
    def profiled(turn, path) -> ProfileResult:
        with turn:                  # on the GPU one side at a time, in order (`profile.Turns`)
            calls.append(("profile", path))
        return ProfileResult(P)

    fakes = {
        "build": types.SimpleNamespace(
            build_extension=lambda kernel, src, cache, out, nvcc="nvcc", pool=None, pch_dir=None: calls.append(("build", src.name)) or
            fake_build_args.append((cache, nvcc)) or BuildResult(
                P, module_path=f"{src.name}.so"),
            load_module=lambda path: f"module:{path}",
            registers_torch_ops=lambda kernel, src: False, module_registers_ops=lambda path: False),
        "workloads": types.SimpleNamespace(get_workload=lambda kernel, src: "gemm-workload"),
        "correctness": types.SimpleNamespace(
            check=lambda kernel, module, workload, seeds: calls.append(("correctness", module)) or CorrectnessResult(P)),
        "bench": types.SimpleNamespace(
            time_revisions=lambda kernel, workload, cand, base, options, kept_methods=None, baseline_remote=None,
            synchronous=False, on_step=None, baseline_function=None: calls.append(("bench", cand, base if baseline_remote is None else baseline_remote)) or
            kept.append(kept_methods) or paced.append(synchronous) or BenchResult(P)),
        "pinned": types.SimpleNamespace(pin=lambda: pinned_at.append(len(calls))),
        "profile": types.SimpleNamespace(
            profile=lambda kernel, path, src, out, options, session=None, turn=None, workload_dir=None:
            profiled(turn, path)),
        "fingerprint": types.SimpleNamespace(collect=lambda ncu: Fingerprint(gpu_name="Fake GPU")),
    }
    for name, fake in fakes.items():
        package = STAGE_PACKAGES[name]
        monkeypatch.setitem(sys.modules, f"{package.__name__}.{name}", fake)
        monkeypatch.setattr(package, name, fake, raising=False)
    monkeypatch.setattr(run, "cuda_available", lambda: True)
    monkeypatch.setattr(run.tc, "device_arch", lambda: "sm_90")
    fakes["build_args"] = fake_build_args
    fakes["kept"] = kept
    fakes["pinned_at"] = pinned_at
    fakes["paced"] = paced
    return calls, fakes


def test_with_a_gpu_the_stages_run_in_order_for_both_sides(tmp_path, fake_gpu):
    calls, _ = fake_gpu
    req = request(tmp_path)
    req.profile_baseline = True          # the parent asks when a relative rule reads the baseline's profile
    result = run.measure(req, lambda e: None)
    assert calls == [("build", "cand"), ("build", "base"), ("correctness", "module:cand.so"),
                     ("bench", "module:cand.so", "module:base.so"), ("profile", "cand.so"), ("profile", "base.so")]
    assert result.fingerprint.gpu_name == "Fake GPU"
    assert result.baseline.profile.status is P


def test_the_baseline_is_profiled_only_when_the_parent_asks(tmp_path, fake_gpu):
    calls, _ = fake_gpu
    req = request(tmp_path)
    req.kernel.gates.max_tensor_pipe_drop_pct = 5        # the child reads no rule: only the request counts
    result = run.measure(req, lambda e: None)
    assert [c for c in calls if c[0] == "profile"] == [("profile", "cand.so")]
    assert result.baseline.profile is None


def test_an_sm_90a_kernel_on_another_gpu_is_not_run_there_and_ends_incomplete(tmp_path, fake_gpu, monkeypatch):
    calls, _ = fake_gpu
    monkeypatch.setattr(run.tc, "device_arch", lambda: "sm_80")
    req = request(tmp_path)
    req.kernel.arch = ["sm_90a"]
    req.kernel.gates.max_latency_regression_pct = 3
    result = run.measure(req, lambda e: None)
    assert calls == []                                   # nothing built: wgmma does not compile for sm_80
    why = "not run: k targets sm_90a only; this GPU is sm_80"
    for stage in (result.candidate.build, result.candidate.correctness, result.bench, result.candidate.profile):
        assert (stage.status, stage.reason) == (StageStatus.NOT_RUN, why)
    report = decide(result, req.kernel.gates)
    assert report.verdict is Verdict.INCOMPLETE and why in report.reason


def test_an_sm_90a_kernel_on_an_sm_90_gpu_runs_every_stage(tmp_path, fake_gpu):
    calls, _ = fake_gpu
    req = request(tmp_path, baseline=False)
    req.kernel.arch = ["sm_90a"]
    run.measure(req, lambda e: None)
    assert [c[0] for c in calls] == ["build", "correctness", "bench", "profile"]


def test_a_failed_candidate_build_skips_correctness_bench_and_profile(tmp_path, fake_gpu):
    calls, fakes = fake_gpu
    fakes["build"].build_extension = lambda kernel, src, cache, out, **kw: BuildResult(StageStatus.FAILED, reason="log")
    result = run.measure(request(tmp_path, baseline=False), lambda e: None)
    assert result.candidate.correctness.reason == "not run: build failed"
    assert result.bench.status is StageStatus.NOT_RUN
    assert calls == []


def test_a_module_that_does_not_import_fails_the_build(tmp_path, fake_gpu):
    _, fakes = fake_gpu

    def broken(path):
        raise ImportError("undefined symbol: wmma_gemm_launch")
    fakes["build"].load_module = broken
    result = run.measure(request(tmp_path, baseline=False), lambda e: None)
    assert result.candidate.build.status is StageStatus.FAILED
    assert "undefined symbol" in result.candidate.build.reason


def test_wrong_results_skip_bench_and_profile(tmp_path, fake_gpu):
    calls, fakes = fake_gpu
    fakes["correctness"].check = lambda *a: CorrectnessResult(StageStatus.FAILED, reason="NaN")
    result = run.measure(request(tmp_path), lambda e: None)
    assert result.bench.reason == "not run: correctness failed"
    assert not [c for c in calls if c[0] in ("bench", "profile")]


def test_static_and_build_share_one_object_cache_and_the_configured_nvcc(tmp_path, fake_gpu, monkeypatch):
    _, fakes = fake_gpu
    static_args = []
    monkeypatch.setattr(run.static, "run_static", lambda *a, **kw: static_args.append(kw) or StaticResult(P))
    req = request(tmp_path)
    req.options.nvcc_path = "/opt/cuda-x/bin/nvcc"
    run.measure(req, lambda e: None)
    static_kw, base_static_kw = static_args
    assert static_kw["nvcc"] == base_static_kw["nvcc"] == "/opt/cuda-x/bin/nvcc"
    assert fakes["build_args"] == [(static_kw["cache_dir"], "/opt/cuda-x/bin/nvcc")] * 2


def test_a_shape_the_custom_workload_refuses_ends_the_job_as_error_naming_the_key(tmp_path, fake_gpu):
    calls, fakes = fake_gpu
    fakes["workloads"].get_workload = get_workload          # the real loader, on a module without torch
    (tmp_path / "cand").mkdir()
    (tmp_path / "cand" / "wl.py").write_text(
        "class W:\n"
        "    def check_shape(self, shape):\n"
        "        return None if shape.params['n'] % 128 == 0 else 'n: a multiple of 128'\n"
        "    make_inputs = refill = call = reference = lowp_reference = print\n"
        "def make():\n    return W()\n")
    req = request(tmp_path)
    req.kernel.workload, req.kernel.shapes = "wl:make", [Shape({"n": 256}), Shape({"n": 100})]
    result = run.measure(req, lambda e: None)
    assert result.candidate.correctness.status is StageStatus.ERROR
    assert result.candidate.correctness.reason == (
        "ManifestError: gate.toml: kernel['k'].shapes[1]: {n = 100}: n: a multiple of 128 (checked by wl:make)")
    assert [c[0] for c in calls] == ["build", "build"]     # no correctness case, no timing, no profile
    assert result.bench.reason == "not run: correctness error"
    report = decide(result, req.kernel.gates)
    assert report.verdict is Verdict.ERROR and "shapes[1]" in report.reason


def test_the_candidates_build_is_saved_before_the_baseline_loads(tmp_path, fake_gpu):
    """A baseline whose import aborts the process (SIGABRT, which no `except` catches) must find the
    candidate's own build result already in the checkpoint, and its own step named in the events."""
    _, fakes = fake_gpu
    saved, events = [], []

    def load(path):
        if path == "cand.so":
            raise ImportError("undefined symbol: conv_fwd")
        assert saved, "nothing was saved before the baseline's module was loaded"
        latest = saved[-1]
        assert latest.candidate.build.status is StageStatus.FAILED
        assert "undefined symbol: conv_fwd" in latest.candidate.build.reason
        return f"module:{path}"
    fakes["build"].load_module = load
    run.measure(request(tmp_path), events.append,
                checkpoint=lambda r: saved.append(run_result_copy(r)))
    loading = [(e.side, e.state, e.detail) for e in events if e.detail == LOADING_MODULE]
    assert loading == [("candidate", "running", LOADING_MODULE), ("baseline", "running", LOADING_MODULE)]


def run_result_copy(result):
    from gate.domain.codec import from_json, to_json
    from gate.domain.results import JobResult
    return from_json(JobResult, to_json(result))


def test_the_timer_is_pinned_before_any_build_is_imported_and_the_kept_methods_reach_the_bench(tmp_path, fake_gpu):
    calls, fakes = fake_gpu
    req = request(tmp_path)
    req.kept_methods = {"m16_n16_k16/float16": "events"}
    run.measure(req, lambda e: None)
    assert fakes["pinned_at"] == [0]          # issue 25: before a module initialiser could patch the timer
    assert fakes["kept"] == [{"m16_n16_k16/float16": "events"}]


@pytest.fixture
def isolated_gpu(tmp_path, fake_gpu, side_host_env, monkeypatch):
    """`fake_gpu` where the sources register torch ops: the baseline goes to a real side host whose
    GPU operations are `side_host_fakes`; its "built module" is a Python file `base_module` writes."""
    from tests.fakes.side_host_fakes import BACKEND

    from gate.timing.remote_side import SideHostClient

    calls, fakes = fake_gpu
    fakes["build"].registers_torch_ops = lambda kernel, src: src.name == "base"   # one side is enough
    module = tmp_path / "base_module.py"
    module.write_text("")
    fakes["build"].build_extension = lambda kernel, src, cache, out, nvcc="nvcc", pool=None, pch_dir=None: calls.append(("build", src.name)) or \
        BuildResult(P, module_path=str(module) if src.name == "base" else f"{src.name}.so")
    start = SideHostClient.start.__func__
    monkeypatch.setattr(SideHostClient, "start",
                        classmethod(lambda cls, *a, **kw: start(cls, *a, **kw, backend=BACKEND)))
    monkeypatch.setattr(gate.timing.pinned, "synchronize", lambda: None, raising=False)
    return calls, module, fakes


def test_ops_registering_sources_time_the_baseline_in_its_own_process_closed_after_the_bench(tmp_path, isolated_gpu,
                                                                                            monkeypatch):
    import contextlib

    from gate.timing.remote_side import SideHostClient

    calls, _, fakes = isolated_gpu
    watched = []

    @contextlib.contextmanager
    def watch_gpu(own_pids=()):
        watched.append(list(own_pids))
        yield types.SimpleNamespace(result=None)
    fake_watch = types.SimpleNamespace(watch_gpu=watch_gpu)
    monkeypatch.setitem(sys.modules, "gate.nvidia.gpu_watch", fake_watch)
    monkeypatch.setattr(gate.nvidia, "gpu_watch", fake_watch, raising=False)
    result = run.measure(request(tmp_path), lambda e: None)
    assert result.candidate.build.status is P and result.baseline.build.status is P
    bench = [c for c in calls if c[0] == "bench"]
    assert len(bench) == 1 and bench[0][1] == "module:cand.so"
    host = bench[0][2]
    assert isinstance(host, SideHostClient)            # not a module imported here
    assert watched == [[host.pid]]                     # the job's own process: no sharing of the GPU
    assert host._process.returncode == 0               # asked to close before the profile
    assert (tmp_path / "art" / "baseline" / "build" / "side-host.log").is_file()
    assert fakes["paced"] == [True]


def test_a_kernel_that_registers_ops_is_paced_alike_alone_so_its_history_means_one_thing(tmp_path, isolated_gpu):
    calls, _, fakes = isolated_gpu
    fakes["build"].registers_torch_ops = lambda kernel, src: True
    run.measure(request(tmp_path, baseline=False), lambda e: None)
    assert ("bench", "module:cand.so", None) in calls and fakes["paced"] == [True]


def test_a_kernel_that_registers_no_ops_keeps_the_one_process_path(tmp_path, fake_gpu):
    calls, fakes = fake_gpu
    run.measure(request(tmp_path), lambda e: None)
    assert ("bench", "module:cand.so", "module:base.so") in calls and fakes["paced"] == [False]


def test_a_baseline_whose_import_aborts_its_host_fails_its_build_and_the_candidate_goes_on(tmp_path, isolated_gpu):
    """Issue 26: the abort ends the side host, not this process: the baseline's build fails naming
    SIGABRT and torch's message, the candidate's build, correctness and bench (alone) are kept."""
    calls, module, _ = isolated_gpu
    module.write_text("import os, sys\nprint('terminate called: Only a single TORCH_LIBRARY can be used to register "
                      "the namespace gate_probe', file=sys.stderr, flush=True)\nos.abort()\n")
    result = run.measure(request(tmp_path), lambda e: None)
    assert result.candidate.build.status is P
    assert result.baseline.build.status is StageStatus.FAILED
    assert result.baseline.build.reason.startswith(
        "the built module does not load in its own process: its process killed by SIGABRT during load")
    assert "Only a single TORCH_LIBRARY" in result.baseline.build.reason
    assert result.candidate.correctness.status is P and result.bench.status is P
    assert ("bench", "module:cand.so", None) in calls


def test_the_manifests_own_process_isolates_sources_that_show_no_registration(tmp_path, isolated_gpu):
    from gate.timing.remote_side import SideHostClient

    calls, _, fakes = isolated_gpu
    fakes["build"].registers_torch_ops = lambda kernel, src: False
    req = request(tmp_path)
    req.kernel.own_process = True
    run.measure(req, lambda e: None)
    bench = [c for c in calls if c[0] == "bench"]
    assert isinstance(bench[0][2], SideHostClient) and fakes["paced"] == [True]
