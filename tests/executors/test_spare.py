"""The child started before its job (gate/executors/spare.py): the real `gate.runner --spare` in the
real box, the real `gate_job` (its static stage compiles with nvcc; no GPU here, so the GPU stages
are not run and the spare's warm-up imports nothing)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.nvidia import devices
from gate.domain.job import JobOrder, RunOptions
from gate.domain.results import StageStatus
from gate.executors import spare as spare_module
from gate.executors.job import JobContext, gate_job
from gate.executors.spare import Spares
from gate.domain.child_protocol import ExitCode
from gate.sources.mirror import Mirror
from tests.security.test_return_path import make_repo

needs_box = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off"
                               or shutil.which("nvcc") is None, reason="needs bubblewrap and nvcc")


@pytest.fixture
def gpu_machine(monkeypatch):
    """The spares act as on a GPU machine (this one has no device nodes)."""
    monkeypatch.setattr(devices, "gpu_nodes", lambda: True)


def _setting(tmp_path: Path) -> tuple[Path, Path, Mirror, RunOptions, Spares]:
    """A repository, a data folder with its mirror, options with an object cache, and its spares."""
    repo = make_repo(tmp_path / "repo")
    data_dir = tmp_path / "data"
    mirror = Mirror(data_dir / "mirrors")
    options = RunOptions(build_cache_dir=str(data_dir / "build-cache"))
    spares = Spares(data_dir / "spares", hidden=(data_dir,))
    return repo, data_dir, mirror, options, spares


def _job(repo: Path, mirror: Mirror, data_dir: Path, options: RunOptions, spares: Spares | None):
    sha = mirror.resolve(str(repo), "HEAD")
    return gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=None, kernel="tiny"),
                    JobContext(data_dir=data_dir, options=options, mirror=mirror, spares=spares))


@needs_box
def test_a_spare_child_runs_the_next_job_and_another_is_started_for_the_one_after(tmp_path, gpu_machine):
    repo, data_dir, mirror, options, spares = _setting(tmp_path)
    try:
        first = _job(repo, mirror, data_dir, options, spares)      # no spare yet: its own child
        waiting = spares._spare
        assert waiting is not None and waiting.child.alive()            # started when the first job's child ended
        second = _job(repo, mirror, data_dir, options, spares)
        assert not any("a spare" in note for note in first.result.notes)
        assert any("before its job's go (a spare)" in note for note in second.result.notes)
        for outcome in (first, second):
            assert outcome.result.candidate.static.status is StageStatus.PASSED
            assert [f.function for f in outcome.result.candidate.static.functions] == \
                   [f.function for f in first.result.candidate.static.functions]
        assert not waiting.folder.exists()                       # its folders went with the second job
        assert spares._spare is not None and spares._spare is not waiting
    finally:
        spares.close()
    assert not (data_dir / "spares").exists()
    assert [p.name for p in (data_dir / "workspaces").glob("*/*")] == []    # no checkout left behind


@needs_box
def test_a_spare_that_died_while_waiting_is_not_used(tmp_path, gpu_machine):
    repo, data_dir, mirror, options, spares = _setting(tmp_path)
    try:
        spares.refill(options)
        dead = spares._spare
        dead.child.proc.kill()
        dead.child.proc.wait()
        outcome = _job(repo, mirror, data_dir, options, spares)
        assert outcome.result.candidate.static.status is StageStatus.PASSED
        assert not any("a spare" in note for note in outcome.result.notes)
        assert not dead.folder.exists()
    finally:
        spares.close()


@needs_box
def test_a_spare_made_for_other_options_is_not_used(tmp_path, gpu_machine):
    data_dir = tmp_path / "data"
    spares = Spares(data_dir / "spares", hidden=(data_dir,))
    try:
        spares.refill(RunOptions(build_cache_dir=str(data_dir / "cache-a")))
        made = spares._spare
        assert spares.take(RunOptions(build_cache_dir=str(data_dir / "cache-b"))) is None
        assert not made.child.alive() and not made.folder.exists()
    finally:
        spares.close()


def test_no_spare_is_started_without_a_gpu_or_gpu_stages(tmp_path, monkeypatch):
    spares = Spares(tmp_path / "spares", hidden=(tmp_path,))
    monkeypatch.setattr(devices, "gpu_nodes", lambda: False)
    spares.refill(RunOptions())
    monkeypatch.setattr(devices, "gpu_nodes", lambda: True)
    spares.refill(RunOptions(gpu_stages=False))
    assert spares._spare is None
    assert spare_module.Spares.take(spares, RunOptions()) is None


def test_a_spare_child_whose_stdin_ends_exits_cleanly_without_a_result(tmp_path):
    import json

    from gate.domain.codec import to_json
    from gate.domain.child_protocol import SPARE_OPTIONS_NAME

    (tmp_path / SPARE_OPTIONS_NAME).write_text(json.dumps(to_json(RunOptions())))
    result = tmp_path / "result.json"
    done = subprocess.run([sys.executable, "-m", "gate.runner", "--spare", str(tmp_path / "request.json"),
                           str(result)], input="", capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert done.returncode == ExitCode.OK, done.stderr
    assert not result.exists()


def test_a_workers_spares_live_in_a_folder_named_after_it_and_only_on_a_gpu_when_asked(tmp_path, monkeypatch):
    from gate.executors.spare import for_worker

    monkeypatch.setattr(devices, "gpu_nodes", lambda: True)
    spares = for_worker(tmp_path, "local@host/serve/42:gpu0", True)
    assert spares.root == tmp_path.resolve() / "spares" / "local-host-serve-42-gpu0"
    assert spares.hidden == (tmp_path.resolve(),)
    assert for_worker(tmp_path, "w", False) is None
    monkeypatch.setattr(devices, "gpu_nodes", lambda: False)
    assert for_worker(tmp_path, "w", True) is None


@needs_box
def test_a_source_run_by_a_spare_child_cannot_read_the_data_folder(tmp_path, gpu_machine):
    """The spare's box is made before its job, on folders chosen first: the data folder around them is
    still hidden. A source that includes the server's database by its absolute path finds nothing, and
    the database's bytes reach no result."""
    from gate.domain.codec import to_json
    from tests.security.test_return_path import GIT

    canary = "gate-canary-spare-5d1e"
    repo, data_dir, mirror, options, spares = _setting(tmp_path)
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "gate.db").write_text(f"SQLite format 3 {canary}\n")
    (repo / "k.cu").write_text(f'#include "{data_dir.resolve() / "gate.db"}"\n__global__ void k() {{}}\n')
    subprocess.run([*GIT, "commit", "-qam", "include the database"], cwd=repo, check=True)
    try:
        spares.refill(options)
        outcome = _job(repo, mirror, data_dir, options, spares)
    finally:
        spares.close()
    assert any("(a spare)" in note for note in outcome.result.notes)
    static = outcome.result.candidate.static
    assert static.status is StageStatus.FAILED and "gate.db: No such file or directory" in static.reason, static.reason
    assert canary not in str(to_json(outcome.result))
