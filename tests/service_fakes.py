"""Test doubles for the service tests: a source reader and a pipeline that return typed results.

They stand in for `gate.pipeline` (git mirror, manifest loader, the GPU child) so the storage, API
and executor code runs for real against real databases and brokers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.domain import (
    BenchResult,
    FunctionResources,
    JobResult,
    KernelMetrics,
    KernelSpec,
    Manifest,
    ProfileResult,
    RuleOutcome,
    RuleRow,
    ShapeTiming,
    SideResults,
    StageStatus,
    StaticResult,
    TimingSamples,
    Verdict,
    VerdictReport,
)
from gate.domain.job import JobOrder, ProgressEvent
from gate.domain.reuse import Provenance
from gate.errors import JobCancelled, ManifestError, SourceError
from gate.executors.job import JobContext

SHA_A = "a" * 40
SHA_B = "b" * 40


class FakeSources:
    """`refs` maps a revision name to a sha; every sha has the same manifest unless `manifests` says."""

    def __init__(self, kernels: tuple[str, ...] = ("attn",), refs: dict[str, str] | None = None,
                 bad_manifest: set[str] | None = None):
        self.kernels = kernels
        self.refs = refs if refs is not None else {"HEAD": SHA_B, SHA_A: SHA_A, SHA_B: SHA_B, "main": SHA_B}
        self.bad_manifest = bad_manifest or set()
        self.resolved: list[tuple[str, str]] = []

    def resolve(self, repo: str, rev: str) -> str:
        self.resolved.append((repo, rev))
        if rev not in self.refs:
            raise SourceError(f"unknown revision {rev!r}")
        return self.refs[rev]

    def commit_info(self, repo: str, sha: str) -> dict[str, Any]:
        return {"author": "Ada <ada@example.com>", "message": "faster softmax",
                "committed_at": "2025-01-02T03:04:05+01:00", "parent_sha": SHA_A if sha != SHA_A else None}

    def commit_place(self, repo: str, sha: str, branch: str) -> tuple[int, bool]:
        """SHA_A is the root (depth 1), every other commit its child, all on the branch."""
        return (1 if sha == SHA_A else 2), True

    def manifest(self, repo: str, sha: str) -> Manifest:
        if sha in self.bad_manifest:
            raise ManifestError("unknown key", key="kernel[0].colour")
        return Manifest(kernels=[KernelSpec(name=k, sources=[f"{k}.cu"]) for k in self.kernels])


def timing(median_us: float, tflops: float | None = None) -> TimingSamples:
    return TimingSamples(samples_us=[median_us] * 3, median_us=median_us, p10_us=median_us * 0.98,
                         p90_us=median_us * 1.03, tflops=tflops)


def job_result(kernel: str = "attn", sha: str = SHA_B, base: str | None = SHA_A) -> JobResult:
    static = StaticResult(status=StageStatus.PASSED, duration_s=2.5, sass_available=True, functions=[
        FunctionResources("fwd_a", "sm_80", 96, 16384, 0, 0, 0, {"HMMA": 64}),
        FunctionResources("fwd_b", "sm_80", 128, 8192, 0, 8, 4, {"HMMA": 32}),
        FunctionResources("fwd_a", "sm_90", 90, 32768, 0, 0, 0, {"HGMMA": 16}),
    ])
    bench = BenchResult(status=StageStatus.PASSED, duration_s=12.0, shapes=[
        ShapeTiming(shape="b1_h8_s512_d64", dtype="float16", candidate=timing(50.0, 80.0),
                    baseline=timing(52.0, 77.0), peers={"sdpa_flash": timing(45.0, 90.0)}, ratio=50 / 52),
    ])
    profile = ProfileResult(status=StageStatus.PASSED, duration_s=30.0, kernels=[
        KernelMetrics(kernel="fwd_a", shape="b1_h8_s512_d64", duration_ns=3000.0, tensor_pipe_pct=60.0,
                      ld_bank_conflict_pct=2.0, st_bank_conflict_pct=0.0, warps_active_pct=40.0,
                      dram_pct=30.0, sm_throughput_pct=70.0),
        KernelMetrics(kernel="fwd_b", shape="b1_h8_s512_d64", duration_ns=1000.0, tensor_pipe_pct=20.0),
    ])
    return JobResult(kernel=kernel, candidate=SideResults(sha=sha, static=static, profile=profile),
                     baseline=SideResults(sha=base) if base else None, bench=bench)


@dataclass
class FakeOutcome:
    result: JobResult
    report: VerdictReport
    artifacts: list[tuple[str, Path]] = field(default_factory=list)
    reuse_key: str = ""
    candidate_key: str = ""
    reused_from: Provenance | None = None


@dataclass
class FakePipeline:
    """A `gate_job` that records its calls. `raise_for` kernels raise; `gate` (an Event) holds a job."""

    verdict: Verdict = Verdict.ACCEPT
    raise_for: set[str] = field(default_factory=set)
    gate: threading.Event | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)
    before_return: Callable[[], None] | None = None
    kept_methods: list[dict[str, str]] = field(default_factory=list)   # per call, as handed over

    def __call__(self, order: JobOrder, context: JobContext) -> FakeOutcome:
        self.calls.append({"repo": order.repo, "sha": order.sha, "base_sha": order.base_sha, "kernel": order.kernel})
        self.kept_methods.append(order.kept_methods)
        context.on_event(ProgressEvent(stage="build", side="candidate", state="started"))
        self.started.set()
        deadline = time.monotonic() + 30
        while self.gate is not None and not self.gate.is_set() and time.monotonic() < deadline:
            if context.cancel.is_set():      # as `gate_job` does: stop, store nothing
                raise JobCancelled("cancelled while held")
            self.gate.wait(0.02)
        if order.kernel in self.raise_for:
            raise RuntimeError(f"boom in {order.kernel}")
        log = Path(context.data_dir) / "build.log"
        log.write_text("ptxas info: Used 96 registers\n")
        context.on_event(ProgressEvent(stage="build", side="candidate", state="passed", detail="1 object"))
        if self.before_return is not None:
            self.before_return()
        rule = RuleRow(rule="max_registers", outcome=RuleOutcome.PASS, reason="128 <= 128", value=128, threshold=128)
        return FakeOutcome(job_result(order.kernel, order.sha, order.base_sha),
                           VerdictReport(self.verdict, "all rules pass", [rule]), [("build_log", log)])
