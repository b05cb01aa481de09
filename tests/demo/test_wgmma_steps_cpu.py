"""The demo's first and last wgmma commits through the real static stage (nvcc, ptxas, cuobjdump) on a machine
without a GPU: `incomplete`, never `reject`, with HGMMA in the sm_90a SASS and no spills on both, so
the slower commit's regression is one of speed that only the device can show; the opcode families
the kernel page charts are stored all the same."""

import shutil
import subprocess

import pytest

from gate.demo.flashcore_commits import build_demo_repo
from gate.domain.job import Checkout, JobRequest, RunOptions
from gate.domain.rule_catalog import Rule
from gate.domain.results import StageStatus
from gate.domain.verdict import RuleOutcome, Verdict
from gate.pipeline import run
from gate.storage.recording import extract_metrics
from gate.verdict.decide import decide
from gate.manifest.load import load_manifest

pytestmark = [pytest.mark.nvcc, pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")]


def test_without_a_gpu_the_wgmma_commits_are_incomplete_with_hgmma_and_no_spills(tmp_path, monkeypatch,
                                                                                  object_cache):
    monkeypatch.setattr(run, "cuda_available", lambda: False)
    repo = tmp_path / "flashcore"
    commits = build_demo_repo(repo)
    (add_sha, _), (slow_sha, _) = commits[6], commits[-1]     # the Hopper kernel added; its ring cut
    dirs = {}
    for name, sha in (("add", add_sha), ("slow", slow_sha)):
        dirs[name] = tmp_path / name
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(dirs[name]), sha], cwd=repo, check=True)
    (spec,) = [k for k in load_manifest(dirs["slow"]).kernels if k.name == "flashcore_wgmma"]
    options = RunOptions(build_cache_dir=str(object_cache))   # the run's: the baseline's objects are hits
    add = Checkout(add_sha, str(dirs["add"]))
    for label, candidate, baseline in (("add", add, None), ("slow", Checkout(slow_sha, str(dirs["slow"])), add)):
        result = run.measure(JobRequest(spec, candidate, str(tmp_path / "art" / label), baseline, options),
                             lambda e: None)
        result.new_kernel = baseline is None
        assert result.candidate.static.status is StageStatus.PASSED, result.candidate.static.reason
        report = decide(result, spec.gates)
        assert report.verdict is Verdict.INCOMPLETE, report.reason
        assert "not run: no CUDA device" in report.reason
        rows = {r.rule: r for r in report.rules if r.rule in (Rule.REQUIRE_SASS, Rule.MAX_SPILL_BYTES)}
        assert rows[Rule.REQUIRE_SASS].outcome is RuleOutcome.PASS and "sm_90a: HGMMA x" in rows[Rule.REQUIRE_SASS].reason
        assert (rows[Rule.MAX_SPILL_BYTES].outcome, rows[Rule.MAX_SPILL_BYTES].value) == (RuleOutcome.PASS, 0)
        assert {f.arch for f in result.candidate.static.functions} == {"sm_90a"}
        # What the kernel page charts for it without a GPU: its SASS opcode families, stored per arch.
        stored = {m.name: m.value for m in extract_metrics(result) if m.series == "sm_90a"}
        # 16-bit instantiations run HGMMA, the e4m3 ones QGMMA: both are the tensor-core family.
        hgmma, qgmma = (sum(f.sass_opcodes.get(op, 0) for f in result.candidate.static.functions)
                        for op in ("HGMMA", "QGMMA"))
        assert hgmma > 0 and qgmma > 0
        assert stored["sass_tensor_core"] == hgmma + qgmma
        assert stored["sass_async_copy"] > 0 and stored["sass_barrier"] > 0     # TMA loads on mbarriers
