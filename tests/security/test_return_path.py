"""Issue 24, the return path: the parent opens only regular files under the job's folder.

The links are made by the GPU child itself, in the box (`hostile_child`, through the child-command
seam of the real `gate_job`); the unit tests below reach what a listing never offers (a link in a
parent component, a hard link, a file that changed type)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gate import returned_files
from gate.executors import child
from gate.executors.job import JobContext, gate_job
from gate.returned_files import Budget, Refused, copy_returned, listed, open_returned, read_returned, usage_bytes
from gate.sources.mirror import Mirror
from gate.domain.job import JobOrder, RunOptions
from tests.security import hostile_child

GIT = ["git", "-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
CANARY = "gate-canary-7f3a9c"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                                 reason="bubblewrap is not installed (apt install bubblewrap)")


def make_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=path, check=True)
    (path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n")
    (path / "gate.toml").write_text(
        '[[kernel]]\nname = "tiny"\nsources = ["k.cu"]\nworkload = "gemm"\narch = ["sm_80"]\n'
        "shapes = [{m = 64, n = 64, k = 64}]\nprofile = false\n")
    subprocess.run([*GIT, "add", "."], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "first"], cwd=path, check=True)
    return path


def secrets(tmp_path: Path) -> dict[str, str | int]:
    host = tmp_path / "host"
    host.mkdir()
    (host / "shadow").write_text(f"root:$6$hash-{CANARY}:19000:0:99999:7:::\n")
    (host / "gate.db").write_text(f"SQLite format 3 {CANARY} the database\n")
    (host / "ptxas.log").write_text(f"{CANARY} only reachable through a linked folder\n")
    return {"host_file": str(host / "shadow"), "database": str(host / "gate.db"), "host_dir": str(host),
            "big_bytes": 2 << 20}


def everything_under(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.rglob("*") if p.is_file() and not p.is_symlink())


@needs_bwrap
def test_links_fifos_and_big_files_made_by_the_child_never_reach_the_artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_API_TOKEN", f"token-{CANARY}")        # what /proc/self/environ would give
    monkeypatch.setattr(returned_files, "FILE_CAP_BYTES", 1 << 20)
    monkeypatch.setattr(child, "child_command", hostile_child.command(secrets(tmp_path)))
    repo = make_repo(tmp_path / "repo")
    data_dir = tmp_path / "data"
    mirror = Mirror(data_dir / "mirrors")
    sha = mirror.resolve(str(repo), "HEAD")
    events = []

    outcome = gate_job(JobOrder(repo=str(repo), sha=sha, base_sha=None, kernel="tiny"),
                       JobContext(data_dir=data_dir, options=RunOptions(), mirror=mirror, on_event=events.append))

    assert outcome.report.verdict is not None                        # the job still ends with a verdict
    kept = {Path(path).relative_to(next(iter((data_dir / "artifacts").iterdir()))).as_posix(): kind
            for kind, path in outcome.artifacts}
    assert kept == {"static/ptxas.log": "ptxas_log", "request.json": "request_json", "result.json": "result_json"}
    stored = everything_under(data_dir)
    assert CANARY.encode() not in stored
    shadow = Path("/etc/shadow")
    if shadow.is_file() and shadow.stat().st_size:
        assert shadow.read_bytes()[:40] not in stored
    prefix = "returned file refused (not read): "
    refused = dict(e.detail.removeprefix(prefix).split(": ", 1) for e in events
                   if e.stage == "box" and e.state == "refused")
    assert refused == {"x.ncu-rep": "a symbolic link", "shadow.ncu-rep": "a symbolic link",
                       "build.log": "a symbolic link", "ptxas.log": "a symbolic link",
                       "candidate/ptxas.log": "a FIFO",
                       "baseline/ptxas.log": f"{2 << 20} bytes, over the {1 << 20}-byte cap per file"}
    assert any("returned file refused" in note for note in outcome.result.notes)
    assert any(e.stage == "box" and "memory" in e.detail for e in events)   # what bounded the box
    # The checkouts and the box's folder are gone; only what was taken back stays.
    assert not list((data_dir / "workspaces").iterdir()) and not list((data_dir / "box").iterdir())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "ok.log").write_text("fine")
    return out


def test_a_plain_file_is_read_and_counted(folder):
    budget = Budget()
    assert read_returned(folder, "ok.log", budget) == b"fine"
    assert budget.taken_bytes == 4 and budget.refused == []


def test_a_link_in_a_parent_component_is_refused(folder, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "ptxas.log").write_text(CANARY)
    (folder / "sub").symlink_to(tmp_path / "elsewhere")
    budget = Budget()
    with pytest.raises(Refused, match="symbolic link|not a directory"):
        open_returned(folder, "sub/ptxas.log", budget)
    assert listed(folder) == ["ok.log", "sub"]          # the listing never walks into it either


def test_a_hard_link_is_refused(folder, tmp_path):
    (tmp_path / "secret").write_text(CANARY)
    os.link(tmp_path / "secret", folder / "build.log")
    with pytest.raises(Refused, match="hard link"):
        read_returned(folder, "build.log", Budget())


def test_a_fifo_is_refused_without_waiting_for_a_writer(folder):
    os.mkfifo(folder / "result.json")
    with pytest.raises(Refused, match="FIFO"):
        read_returned(folder, "result.json", Budget())


def test_a_device_is_refused(folder):
    (folder / "ptxas.log").symlink_to("/dev/zero")
    with pytest.raises(Refused, match="symbolic link"):
        read_returned(folder, "ptxas.log", Budget())


def test_paths_that_leave_the_folder_are_refused_by_name(folder):
    for bad in ("../ok.log", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(ValueError, match="not a plain path"):
            open_returned(folder, bad, Budget())


def test_the_job_cap_counts_every_file(folder, tmp_path):
    (folder / "a.log").write_bytes(b"a" * 600)
    (folder / "b.log").write_bytes(b"b" * 600)
    budget = Budget(file_bytes=1000, job_bytes=1000)
    copy_returned(folder, "a.log", tmp_path / "kept" / "a.log", budget)
    with pytest.raises(Refused, match="job's 1000-byte cap"):
        copy_returned(folder, "b.log", tmp_path / "kept" / "b.log", budget)
    assert not (tmp_path / "kept" / "b.log").exists()
    assert budget.evidence() == ["returned file refused (not read): b.log: 600 bytes would pass the job's "
                                 "1000-byte cap"]


def test_a_folder_nested_without_end_is_not_walked(folder):
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(returned_files.MAX_DEPTH + 5):         # deeper than any stack walk should go
        os.mkdir("d", dir_fd=fd)
        nested = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nested
    os.close(fd)
    assert usage_bytes(folder) == returned_files.OVER_ANY_CAP   # over any disk cap: the job is stopped
    assert "ok.log" in listed(folder)


def test_the_store_never_serves_or_keeps_a_link(tmp_path):
    from gate.storage import artifacts

    data_dir = tmp_path / "data"
    folder = artifacts.job_artifact_dir(data_dir, 1)
    folder.mkdir(parents=True)
    (tmp_path / "secret").write_text(CANARY)
    (folder / "build.log").symlink_to(tmp_path / "secret")
    (data_dir / "artifacts" / "2").symlink_to(tmp_path)              # a link on the way
    assert artifacts.resolve(data_dir, "artifacts/1/build.log") is None
    assert artifacts.resolve(data_dir, "artifacts/2/secret") is None
    with pytest.raises(Refused, match="symbolic link"):
        artifacts.keep(data_dir, 3, "build_log", folder / "build.log")
    assert not (artifacts.job_artifact_dir(data_dir, 3) / "build.log").exists()


def test_a_folder_with_entries_without_end_counts_as_over_the_cap(folder, monkeypatch):
    monkeypatch.setattr(returned_files, "MAX_MEASURED", 50)
    for i in range(60):
        (folder / f"f{i}").touch()
    assert usage_bytes(folder) == returned_files.OVER_ANY_CAP
