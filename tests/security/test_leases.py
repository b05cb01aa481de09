"""Host-wide leases (`gate.box_leases`, issue 42): the host's compile places are shared by every
process, boxed ones included, and a wait for one is bounded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from gate import box, box_leases
from gate.nvidia import compiler

HOLD = ("import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\ntime.sleep(60)")
TRY = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\ntry:\n    fcntl.flock(fd, fcntl.LOCK_EX | "
       "fcntl.LOCK_NB)\n    print('free')\nexcept OSError:\n    print('busy')")


@pytest.fixture
def places(tmp_path, monkeypatch):
    monkeypatch.setattr(box_leases, "LEASE_DIR", tmp_path / "leases")
    monkeypatch.setattr(compiler, "compile_slots", lambda: 1)
    return compiler.slot_folder()


def test_a_place_another_process_holds_is_waited_for_and_the_wait_is_bounded(places, monkeypatch):
    with subprocess.Popen([sys.executable, "-c", HOLD, str(places / "0")], stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout.readline().strip() == "held"
            monkeypatch.setattr(compiler, "SLOT_WAIT_S", 0.5)
            started = time.monotonic()
            with compiler.compile_slot():            # no place came free: the compile runs anyway
                waited = time.monotonic() - started
            assert 0.5 <= waited < 5
        finally:
            holder.kill()
    assert box_leases.take("compile-slots", 1, 0) is not None     # a dead holder's lock is gone


def test_two_takers_never_hold_the_same_place(places):
    first = box_leases.take("compile-slots", 1, 0)
    assert first is not None and box_leases.take("compile-slots", 1, 0.1) is None
    first.release()
    assert box_leases.take("compile-slots", 1, 0) is not None


@pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                    reason="bubblewrap is not installed (apt install bubblewrap)")
def test_a_boxed_child_locks_the_same_places_as_the_host(places, tmp_path):
    """The GPU child's box binds the places' folder read-only (`executors.child.launch`): the
    compiles it runs wait for the same places as every other job's."""
    held = box_leases.take("compile-slots", 1, 0)

    def boxed_try() -> str:
        out = box.run(box.Box(readable=(places,)), [sys.executable, "-c", TRY, str(places / "0")], cwd=tmp_path,
                      timeout_s=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()
    assert boxed_try() == "busy"
    held.release()
    assert boxed_try() == "free"


def test_a_link_in_the_lease_folder_is_never_followed(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere"
    target.mkdir()
    target.chmod(0o700)
    (tmp_path / "leases").mkdir()
    (tmp_path / "leases" / "compile-slots").symlink_to(target)
    monkeypatch.setattr(box_leases, "LEASE_DIR", tmp_path / "leases")
    assert box_leases.take("compile-slots", 2, 0) is None
    assert list(target.iterdir()) == [] and (target.stat().st_mode & 0o777) == 0o700


def test_a_link_in_place_of_the_lease_folder_itself_is_never_followed(tmp_path, monkeypatch):
    target = tmp_path / "etc"
    target.mkdir()
    (tmp_path / "gate-leases").symlink_to(target)
    monkeypatch.setattr(box_leases, "LEASE_DIR", tmp_path / "gate-leases")
    box_leases.folder("box-uids", 2)
    assert list(target.iterdir()) == []
