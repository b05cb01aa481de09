"""Unchanged kernels are not re-measured (issue 29, point 2), through the real parent of a job:
a git repository of ten kernels, the mirror, the reuse key, the history on SQLite and PostgreSQL, the
verdict; only the GPU child is a recording stand-in, so each test names exactly the kernels measured."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from service_fakes import job_result
from sqlalchemy import select, update

from gate.domain import BuildResult, CorrectnessCase, CorrectnessResult, JobResult, StageStatus
from gate.domain.clock import utcnow
from gate.domain.codec import from_json
from gate.domain.job import RunOptions, method_key
from gate.domain.reuse import reused_line
from gate.executors import job as job_module
from gate.executors.base import JobEnvironment, run_claimed
from gate.executors.job import gate_job
from gate.sources.mirror import Mirror
from gate.storage import artifacts as artifact_files
from gate.storage import claims, timing_methods
from gate.storage.models import Artifact, Job, Repository, Revision, VerdictRecord
from gate.storage.queries import Revisions
from gate.storage.unit import Store

KERNELS = [f"k{i}" for i in range(10)]
SHARED = {"k0", "k1", "k2", "k3"}          # these include common.cuh; the others include nothing local
ENVIRONMENT = "NVIDIA H200, 570.86 (a stand-in for the parent's probe)"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _kernel_source(name: str, body: str = "") -> str:
    include = '#include "common.cuh"\n' if name in SHARED else ""
    return f"{include}__global__ void {name}(float* x) {{ x[threadIdx.x] = {body or '1.0f'}; }}\n"


def _repository(root: Path) -> Path:
    repo = root / "ten"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    manifest = "".join(f'[[kernel]]\nname = "{k}"\nsources = ["{k}.cu"]\nworkload = "gemm"\n'
                       f'shapes = [{{m = 16, n = 16, k = 16}}]\n\n' for k in KERNELS)
    files = {"gate.toml": manifest, "common.cuh": "#define SCALE 1.0f\n", "README.md": "ten kernels\n"}
    files.update({f"{k}.cu": _kernel_source(k) for k in KERNELS})
    _commit(repo, files, "ten kernels")
    return repo


class History:
    """Submits revisions as the service does (one job per kernel) and runs them to stored verdicts."""

    def __init__(self, session_factory, tmp_path: Path, repo: Path, measured: list[str], **options):
        self.session_factory, self.repo = session_factory, repo
        self.baselines_profiled: list[str] = []      # the kernels whose child was asked to profile the baseline
        self.env = JobEnvironment(store=Store(session_factory.kw["bind"]), gate_job=gate_job,
                                  data_dir=tmp_path / "data", options=RunOptions(**options),
                                  mirror=Mirror(tmp_path / "mirrors"))
        self.measured = measured
        with session_factory() as s:
            row = Repository(name="ten", url=str(repo))
            s.add(row)
            s.commit()
            self.repository_id = row.id

    def gate(self, sha: str, base_sha: str | None, remeasure: bool = False) -> list[str]:
        """Gate every kernel of `sha`; the kernels the stand-in child measured, in order."""
        self.measured.clear()
        self.baselines_profiled.clear()
        with self.session_factory() as s:
            rev = Revision(repository_id=self.repository_id, sha=sha, base_sha=base_sha, remeasure=remeasure,
                           jobs=[Job(kernel=k) for k in KERNELS])
            s.add(rev)
            s.commit()
            ids = [j.id for j in rev.jobs]
        for job_id in ids:
            with self.session_factory() as s:
                attempt = claims.Claims(s).claim(job_id, worker="w")
            run_claimed(self.env, job_id, attempt)
        with self.session_factory() as s:
            verdicts = s.scalars(select(VerdictRecord.verdict).where(VerdictRecord.job_id.in_(ids))).all()
        assert set(verdicts) == {"accept"}, verdicts
        return list(self.measured)


@pytest.fixture
def history(session_factory, tmp_path, monkeypatch):
    measured: list[str] = []

    def child(request, **_):   # the GPU child: records what it was asked to measure
        measured.append(request.kernel.name)
        result = job_result(request.kernel.name, request.candidate.sha,
                            request.baseline.sha if request.baseline else None)
        result.candidate.build = BuildResult(status=StageStatus.PASSED)
        result.candidate.profile.log = f"profiled {request.kernel.name} at {request.candidate.sha}"
        if result.baseline is not None:
            result.baseline.build = BuildResult(status=StageStatus.PASSED)
            if request.profile_baseline:
                hist.baselines_profiled.append(request.kernel.name)
                result.baseline.profile = dataclasses.replace(
                    result.candidate.profile, log=f"profiled {request.kernel.name} at {request.baseline.sha}")
        result.candidate.correctness = CorrectnessResult(status=StageStatus.PASSED, cases=[
            CorrectnessCase(shape="m16_n16_k16", dtype="float16", seed=0, passed=True)])
        for shape in result.bench.shapes:     # nothing hidden on another stream
            shape.all_streams_us = shape.caller_stream_us = shape.candidate.median_us
        return result

    monkeypatch.setattr(job_module, "run_child", child)
    monkeypatch.setattr(job_module, "environment_inputs", lambda options, gpu=None: ENVIRONMENT)
    repo = _repository(tmp_path)
    hist = History(session_factory, tmp_path, repo, measured)
    return hist


def _warm(history: History) -> str:
    """Root commit, then a commit touching no kernel: every kernel has been measured against itself."""
    root = _git(history.repo, "rev-parse", "HEAD")
    assert history.gate(root, None) == KERNELS                        # new kernels: nothing to reuse
    quiet = _commit(history.repo, {"README.md": "ten kernels, documented\n"}, "docs")
    assert history.gate(quiet, root) == KERNELS                       # first pair (x, x): measured
    again = _commit(history.repo, {"README.md": "ten kernels, documented twice\n"}, "docs")
    assert history.gate(again, quiet) == []                           # the same pairs: all reused
    return again


def test_a_commit_that_changes_one_kernel_measures_that_kernel_only(history):
    base = _warm(history)
    changed = _commit(history.repo, {"k7.cu": _kernel_source("k7", "2.0f")}, "k7 scales")
    assert history.gate(changed, base) == ["k7"]


def test_a_shared_header_re_measures_every_kernel_that_includes_it_and_no_other(history):
    base = _warm(history)
    changed = _commit(history.repo, {"common.cuh": "#define SCALE 2.0f\n"}, "common scale")
    assert history.gate(changed, base) == sorted(SHARED)


def test_a_reused_job_names_the_job_that_measured_and_keeps_its_own_rows(history):
    base = _warm(history)
    with history.session_factory() as s:
        (reused,) = s.scalars(select(Job).join(Revision).where(Revision.sha == base, Job.kernel == "k9")).all()
        origin = s.get(Job, reused.reused_from_job_id)
        assert origin.reused_from_job_id is None and origin.reuse_key == reused.reuse_key
        assert origin.revision.sha != base                     # measured at the earlier docs commit
        assert reused.verdict.verdict == "accept" and reused.stages   # its own verdict and stage rows
        detail = Revisions(s).detail(reused.revision_id)              # what the API and the page show
    lines = {j.kernel: j.reused_from for j in detail.jobs}
    assert lines["k9"] == reused_line(origin.revision.sha, origin.id, origin.finished_at.isoformat())
    assert lines["k9"].startswith(f"reused from {origin.revision.sha[:12]} job {origin.id}, ")


def _job_at(history: History, sha: str, kernel: str) -> Job:
    with history.session_factory() as s:
        return s.scalars(select(Job).join(Revision).where(Revision.sha == sha, Job.kernel == kernel)).one()


def _stored_result(history: History, job_id: int) -> JobResult:
    """The result the history stored for a job: what a later job or the pages read back."""
    with history.session_factory() as s:
        relative = s.scalars(select(Artifact.path).where(Artifact.job_id == job_id, Artifact.kind == "result")).one()
    path = artifact_files.resolve(history.env.data_dir, relative)
    return from_json(JobResult, json.loads(path.read_text())["result"])


def test_an_unchanged_baseline_takes_the_profile_its_code_had_as_an_earlier_candidate(history):
    root = _git(history.repo, "rev-parse", "HEAD")
    history.gate(root, None)
    quiet = _commit(history.repo, {"README.md": "documented\n"}, "docs")
    assert history.gate(quiet, root) == KERNELS               # the pair (x, x) is new: measured ...
    assert history.baselines_profiled == []                   # ... but each baseline was root's candidate
    changed = _commit(history.repo, {"k7.cu": _kernel_source("k7", "2.0f")}, "k7 scales")
    assert history.gate(changed, quiet) == ["k7"] and history.baselines_profiled == []
    origin = _job_at(history, quiet, "k7")                    # measured k7's current code as its candidate
    assert origin.reused_from_job_id is None
    job = _job_at(history, changed, "k7")
    result = _stored_result(history, job.id)
    line = "baseline profile " + reused_line(quiet, origin.id, origin.finished_at.isoformat())
    assert result.baseline.profile.log == f"profiled k7 at {quiet}"     # the origin's candidate profile
    assert result.baseline.profile.kernels == result.candidate.profile.kernels
    assert line in result.notes and line.startswith(f"baseline profile reused from {quiet[:12]} job {origin.id}, ")
    with history.session_factory() as s:
        assert s.get(Job, job.id).verdict.verdict == "accept"
        events = [e.detail for e in s.get(Job, job.id).events]
    assert any(line in detail for detail in events)           # the job's progress says so too


def test_a_baseline_is_profiled_when_its_code_was_never_a_measured_candidate(history):
    root = _git(history.repo, "rev-parse", "HEAD")
    history.gate(root, None)
    first = _commit(history.repo, {"k7.cu": _kernel_source("k7", "2.0f")}, "k7 scales")
    second = _commit(history.repo, {"k7.cu": _kernel_source("k7", "3.0f")}, "k7 scales more")
    history.gate(second, first)              # k7 at `first` was never gated: nothing to take
    assert "k7" in history.baselines_profiled
    result = _stored_result(history, _job_at(history, second, "k7").id)
    assert result.baseline.profile.log == f"profiled k7 at {first}"
    assert not any(note.startswith("baseline profile reused") for note in result.notes)


def test_remeasure_and_an_age_limit_of_zero_profile_the_baseline_again(history):
    base = _warm(history)
    again = _commit(history.repo, {"README.md": "once more\n"}, "docs")
    history.gate(again, base, remeasure=True)
    assert history.baselines_profiled == KERNELS
    history.env.options = RunOptions(reuse_max_age_h=0)
    more = _commit(history.repo, {"k7.cu": _kernel_source("k7", "2.0f")}, "k7 scales")
    history.gate(more, again)
    assert history.baselines_profiled == KERNELS


def test_profiles_older_than_the_age_limit_are_not_taken(history):
    base = _warm(history)
    with history.session_factory() as s:
        s.execute(update(Job).values(finished_at=utcnow() - timedelta(hours=200)))
        s.commit()
    changed = _commit(history.repo, {"k7.cu": _kernel_source("k7", "2.0f")}, "k7 scales")
    history.gate(changed, base)
    assert "k7" in history.baselines_profiled


def test_remeasure_measures_every_kernel_again(history):
    base = _warm(history)
    again = _commit(history.repo, {"README.md": "once more\n"}, "docs")
    assert history.gate(again, base, remeasure=True) == KERNELS


def test_figures_older_than_the_age_limit_are_measured_again(history):
    base = _warm(history)
    with history.session_factory() as s:
        s.execute(update(Job).values(finished_at=utcnow() - timedelta(hours=200)))
        s.commit()
    again = _commit(history.repo, {"README.md": "once more\n"}, "docs")
    assert history.gate(again, base) == KERNELS                 # the default limit is 168 h


def test_an_age_limit_of_zero_never_reuses(session_factory, tmp_path, monkeypatch, history):
    base = _warm(history)
    history.env.options = RunOptions(reuse_max_age_h=0)
    again = _commit(history.repo, {"README.md": "once more\n"}, "docs")
    assert history.gate(again, base) == KERNELS


def test_without_a_gpu_there_is_no_key_and_nothing_is_reused(history, monkeypatch):
    base = _warm(history)
    monkeypatch.setattr(job_module, "environment_inputs", lambda options, gpu=None: "")
    again = _commit(history.repo, {"README.md": "once more\n"}, "docs")
    assert history.gate(again, base) == KERNELS


def test_the_pages_say_where_reused_figures_came_from(history, database_url, tmp_path):
    from fastapi.testclient import TestClient
    from service_fakes import FakePipeline, FakeSources

    from gate.api.app import create_app
    from gate.config import Settings

    base = _warm(history)
    with history.session_factory() as s:
        rev_id = s.scalar(select(Revision.id).where(Revision.sha == base))
    app = create_app(Settings(database_url=database_url, data_dir=tmp_path / "data"), gate_job=FakePipeline(),
                     sources=FakeSources(), embedded_executor=False)
    with TestClient(app) as client:
        revision_page = client.get(f"/revisions/{rev_id}").text
        kernel_page = client.get("/kernels/k9").text
    assert revision_page.count("Figures reused from ") == len(KERNELS)
    assert "reused from an earlier job" in kernel_page     # the ringed trace of the history chart


def test_kernels_first_gated_against_themselves_are_reused_once_the_history_keeps_their_methods(history):
    """The device bench's order (bench/reuse_cost.py): the first jobs compare each kernel with itself
    and have no history; the next revision's jobs are handed the methods those jobs chose. Hashing
    the handed methods into the key made all ten measure again on the H200."""
    root = _git(history.repo, "rev-parse", "HEAD")
    assert history.gate(root, root) == KERNELS
    with history.session_factory() as s:
        kept = timing_methods.kept_methods(s, history.repository_id, "k0", "")
    changed = _commit(history.repo, {"k7.cu": _kernel_source("k7", "2.0f")}, "k7 changed")
    assert history.gate(changed, root) == ["k7"], kept


def test_a_job_timed_another_way_than_the_history_keeps_is_measured_again():
    from gate.domain.job import methods_agree

    result = job_result("k0", "a" * 40, "b" * 40)
    st = result.bench.shapes[0]
    same = {method_key(st.shape, st.dtype): st.method}
    other = {method_key(st.shape, st.dtype): "graph" if st.method == "events" else "events"}
    assert methods_agree(result, {}) and methods_agree(result, same)
    assert not methods_agree(result, other)
