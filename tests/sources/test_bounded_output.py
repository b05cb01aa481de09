"""git's output costs the server bounded memory, whatever the repository holds.

Issue 12: a 1 GiB blob took the server from 333 to 2,391 MiB because git output was read whole.
Memory is measured with tracemalloc (every Python allocation, the reader threads' included), so the
figure is the code path's own and not the test process's high-water mark.
"""

from __future__ import annotations

import os
import stat
import tracemalloc
from contextlib import contextmanager

import pytest

from gate.errors import SourceError
from gate.services.sources import MirrorSources
from gate.sources.mirror import MAX_COMMIT_INFO_BYTES, TRUNCATED, Mirror
from tests.samples.build import _git, make_repo

MiB = 1 << 20


@contextmanager
def peak_mib():
    """Yields a list that holds, after the block, the peak MiB Python allocated inside it."""
    seen: list[float] = []
    tracemalloc.start()
    try:
        yield seen
    finally:
        seen.append(tracemalloc.get_traced_memory()[1] / MiB)
        tracemalloc.stop()


def test_a_commit_message_of_64_mib_is_cut_and_never_held_whole(tmp_path):
    """Failed before (peak ~200 MiB, the whole message stored), passes now (< 4 MiB, its start)."""
    repo, _ = make_repo(tmp_path / "src")
    message = tmp_path / "message.txt"
    with open(message, "wb") as out:
        out.write(b"faster softmax\n\n")
        for _ in range(64):
            out.write((b"y" * 1023 + b"\n") * 1024)
    _git(repo, "commit", "-q", "--allow-empty", "-F", str(message))
    sha = _git(repo, "rev-parse", "HEAD")
    mirror = Mirror(tmp_path / "mirrors")
    mirror.resolve(str(repo), sha)
    with peak_mib() as peak:
        info = mirror.commit_info(str(repo), sha)
    assert peak[0] < 4
    assert info["message"].startswith("faster softmax") and info["message"].endswith(TRUNCATED.strip())
    assert len(info["message"]) < MAX_COMMIT_INFO_BYTES + len(TRUNCATED)
    assert info["parent_sha"] is not None


def test_a_repository_with_a_128_mib_blob_is_planned_and_checked_out_in_bounded_memory(tmp_path):
    """The planning path (resolve, commit info, gate.toml) and a job's checkout stream the tree to
    files: the blob is never in the server's memory. (Phase 1 made `git archive` stream; this
    guards every step of the path against reading it whole again.)"""
    repo, _ = make_repo(tmp_path / "src")
    with open(repo / "weights.bin", "wb") as blob:
        for _ in range(128):
            blob.write(os.urandom(1024) * 1024)         # 1 MiB that git's zlib cannot shrink much
    _git(repo, "add", "weights.bin")
    _git(repo, "commit", "-q", "-m", "weights")
    sha = _git(repo, "rev-parse", "HEAD")
    sources = MirrorSources(tmp_path / "data")
    with peak_mib() as peak:
        assert sources.resolve(str(repo), "HEAD") == sha
        sources.commit_info(str(repo), sha)
        sources.manifest(str(repo), sha)
        sources.mirror.checkout(str(repo), sha, tmp_path / "ws")
    assert peak[0] < 8
    assert (tmp_path / "ws" / "weights.bin").stat().st_size == 128 * MiB


def test_a_remote_flooding_stderr_costs_bounded_memory_and_its_fatal_line_is_kept(tmp_path, monkeypatch):
    """A remote may print `remote:` lines for as long as the clone's timeout allows. Failed before
    (the whole 100 MiB read), passes now (the last 64 KiB, which hold git's cause)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake_git = fake_bin / "git"
    fake_git.write_text('#!/bin/sh\nyes "remote: Counting objects: 42% (4200/10000)" | head -c 104857600 >&2\n'
                        'echo "fatal: the remote hung up: the real cause" >&2\nexit 128\n')
    fake_git.chmod(fake_git.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    repo, _ = make_repo(tmp_path / "src")
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    with peak_mib() as peak, pytest.raises(SourceError, match="the real cause") as failed:
        Mirror(tmp_path / "mirrors").update(str(repo))
    assert peak[0] < 4
    assert len(str(failed.value)) < 4000
