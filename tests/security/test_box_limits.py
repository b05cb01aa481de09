"""Issue 24, limits for the whole box, not per process: one job once took +8.2 GiB of host memory
(tmpfs and several processes each under its rlimit), a 500-byte preprocessor bomb +6.6 GB, and its
folders stayed on disk. Each test runs a real bwrap box."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gate import box
from gate.compiling.static import run_static
from gate.domain import KernelSpec, StageStatus
from gate.domain.job import Checkout, JobRequest
from gate.executors.child import run_child
from tests.patience import HANG_S

MiB = 1 << 20
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                                reason="bubblewrap is not installed (apt install bubblewrap)")
# Under 500 bytes that expand to 2^26 copies of a token: gigabytes of preprocessed source unless stopped.
BOMB = "#define A x x\n" + "".join(f"#define {chr(66 + i)} {chr(65 + i)} {chr(65 + i)}\n" for i in range(25)) + \
       "Z\n__global__ void k() {}\n"


def child(script: str) -> list[str]:
    prelude = ("import json, os, sys, time\n"
               "def event(stage, state, side='candidate'):\n"
               "    print(json.dumps({'type': 'progress', 'stage': stage, 'side': side, 'state': state}), flush=True)\n")
    return [sys.executable, "-c", prelude + textwrap.dedent(script)]


def request(tmp_path: Path) -> JobRequest:
    (tmp_path / "checkout").mkdir(exist_ok=True)
    return JobRequest(kernel=KernelSpec(name="k", sources=["k.cu"]),
                      candidate=Checkout("c" * 40, str(tmp_path / "checkout")), artifacts_dir=str(tmp_path / "art"))


def cgroup_or_skip(limits: box.Limits) -> None:
    cap = box.memory_cap(box.Box(limits=limits))
    cap.release()
    if cap.folder is None:
        pytest.skip(f"no memory cgroup here: {cap.mechanism}")


def test_processes_that_together_pass_the_box_memory_cap_are_killed_and_the_job_says_so(tmp_path, monkeypatch):
    # Each process stays under its own RLIMIT_DATA (256 MiB); together they pass the box's 192 MiB.
    limits = box.Limits(memory_bytes=256 * MiB, box_memory_bytes=192 * MiB, tmp_bytes=64 * MiB)
    cgroup_or_skip(limits)
    monkeypatch.setattr(box, "GPU_CHILD_LIMITS", limits)
    result = run_child(request(tmp_path), 60, None, command=child("""
        import subprocess
        event("correctness", "started")
        hog = "b = bytearray(120 << 20); import time; time.sleep(5)"
        procs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(3)]
        [p.wait() for p in procs]       # the cgroup kills the biggest; the child itself carries on...
        sys.exit(1 if any(p.returncode for p in procs) else 0)    # ...and fails as its work failed
    """))
    failed = result.candidate.correctness
    assert failed.status is StageStatus.FAILED
    assert "memory cap" in failed.reason and "cgroup" in failed.reason
    assert result.notes[0].startswith("box limits: memory: cgroup")


def test_tmpfs_pages_are_capped(tmp_path):
    (tmp_path / "out").mkdir()
    limits = box.Limits(tmp_bytes=16 * MiB)
    script = ("import os\nfor where in ('/tmp', '/dev/shm', '/var/tmp'):\n"
              "    try:\n        open(f'{where}/fill', 'wb').write(b'x' * (64 << 20))\n        print(where, 'wrote')\n"
              "    except OSError as exc:\n        print(where, exc.errno)\n")
    out = box.run(box.Box(writable=(tmp_path / "out",), limits=limits), [sys.executable, "-c", script],
                  cwd=tmp_path, timeout_s=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["/tmp", "28", "/dev/shm", "28", "/var/tmp", "28"]   # 28: ENOSPC


def test_a_child_filling_its_folder_past_the_disk_cap_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(box, "GPU_CHILD_LIMITS", box.Limits(disk_bytes=8 * MiB))
    started = time.monotonic()
    result = run_child(request(tmp_path), 60, None, command=child("""
        event("profile", "started")
        with open("fill.ncu-rep", "wb") as out:
            for _ in range(512):
                out.write(b"x" * (1 << 20)); out.flush(); os.fsync(out.fileno()); time.sleep(0.02)
        time.sleep(30)
    """))
    assert time.monotonic() - started < 512 * 0.02 + 30     # the child's own run, had the cap not stopped it
    failed = result.candidate.profile
    assert failed.status is StageStatus.FAILED and "disk cap" in failed.reason
    assert (tmp_path / "art" / "fill.ncu-rep").stat().st_size < 128 * MiB


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_a_preprocessor_bomb_fails_its_compile_quickly_and_within_the_caps(tmp_path, monkeypatch):
    assert len(BOMB) < 500
    monkeypatch.setattr(box, "COMPILE_LIMITS", box.Limits(memory_bytes=1024 * MiB, cpu_s=120, file_bytes=256 * MiB,
                                                          box_memory_bytes=1024 * MiB, tmp_bytes=128 * MiB))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text(BOMB)
    (tmp_path / "out").mkdir()
    free_before = shutil.disk_usage("/tmp").free
    res = run_static(KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"], timeout_s=HANG_S), repo, tmp_path / "out")
    # Ended by a cap (memory, file size, scratch space), never by the clock, however busy the machine:
    # the wall-time limit is a hang guard and CPU time (120 s allowed) ends only by SIGXCPU, a signal.
    assert "timed out" not in res.reason and "SIGXCPU" not in res.reason, res.reason
    # the compile's own words (no space, file size: FAILED), or the gate's memory limit named (ERROR):
    # never a pass, never a hang
    assert res.status in (StageStatus.FAILED, StageStatus.ERROR) and res.reason
    if res.status is StageStatus.ERROR:
        assert "GATE_COMPILE_MEMORY_GIB" in res.reason
    assert free_before - shutil.disk_usage("/tmp").free < 512 * MiB


def test_the_box_cgroup_is_removed_after_the_command(tmp_path):
    limits = box.Limits(box_memory_bytes=256 * MiB)
    cgroup_or_skip(limits)
    proc = box.popen(box.Box(limits=limits), [sys.executable, "-c", "print('hi')"], cwd=tmp_path,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    folder = proc.memory.folder
    proc.communicate(timeout=60)
    assert proc.returncode == 0 and not folder.exists()


def test_without_a_cgroup_the_job_says_what_bounds_it_instead(tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_BOX_CGROUP", "off")
    result = run_child(request(tmp_path), 60, None, command=child("""
        open("result.json", "w").write(json.dumps({"kernel": "k", "candidate": {"sha": "c"}}))
    """))
    assert result.notes[0].startswith("box limits: memory: no memory cgroup on this host: per-process "
                                      "RLIMIT_DATA and tmpfs mounts of")


def test_a_box_whose_cgroup_cannot_be_joined_is_the_gates_error(tmp_path, monkeypatch):
    from gate import box_memory

    monkeypatch.setattr(box, "memory_cap", lambda _box: box_memory.MemoryCap("test", tmp_path / "gone", 2))
    (tmp_path / "out").mkdir()
    with pytest.raises(box.BoxError, match="could not join the box memory cgroup"):
        box.run(box.Box(writable=(tmp_path / "out",)), ["true"], cwd=tmp_path, timeout_s=30)


def test_a_child_that_ends_cleanly_after_a_kill_keeps_its_result_with_a_note(tmp_path, monkeypatch):
    """A compiler killed by the cgroup is that compile's failure (a kernel fault, `reject`), not the
    gate's: the child's result stands, and the job notes the kill."""
    limits = box.Limits(memory_bytes=512 * MiB, box_memory_bytes=128 * MiB, tmp_bytes=64 * MiB)
    cgroup_or_skip(limits)
    monkeypatch.setattr(box, "GPU_CHILD_LIMITS", limits)
    result = run_child(request(tmp_path), 60, None, command=child("""
        import subprocess
        event("build", "started")
        hog = subprocess.run([sys.executable, "-c", "b = bytearray(300 << 20)"])
        event("build", "failed")
        json.dump({"kernel": "k", "candidate": {"sha": "c", "build": {"status": "failed",
                   "reason": f"compiler exited {hog.returncode}"}}}, open("result.json", "w"))
    """))
    assert result.candidate.build.status is StageStatus.FAILED
    assert result.candidate.build.reason == "compiler exited -9"
    assert any(n.startswith("the box had a process killed for passing the box's memory cap") for n in result.notes)


THREADS_TO_THE_CAP = """
import threading, time
n = 0
try:
    while n < 10000:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        n += 1
except RuntimeError:
    pass
print(n, flush=True)
time.sleep(60)
"""


def _own_count_or_skip() -> None:
    cap = box.memory_cap(box.Box())
    cap.release()
    if os.geteuid() != 0 and not cap.pids:
        pytest.skip("as another user every box keeps that user, whose process count they share")


def test_a_box_that_forks_to_its_cap_does_not_stop_another_from_forking(tmp_path):
    """Issue 42: every box ran as one user id, and RLIMIT_NPROC counts all of a user's processes and
    threads: a GPU child's torch threads and a second job's compiles shared one count, and gcc's
    `vfork` for collect2 failed ("Resource temporarily unavailable"). Each box now has its own."""
    _own_count_or_skip()
    limits = box.Limits(processes=64)
    with box.popen(box.Box(limits=limits), [sys.executable, "-c", THREADS_TO_THE_CAP], cwd=tmp_path,
                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as hog:
        _holding(hog, limits, tmp_path)


def _holding(hog: subprocess.Popen, limits: box.Limits, tmp_path: Path) -> None:
    try:
        reached = int(hog.stdout.readline())
        assert 0 < reached < 64                                   # the first box stopped at its own cap
        other = box.run(box.Box(limits=limits), [sys.executable, "-c", (
            "import threading, time\nts = [threading.Thread(target=time.sleep, args=(1,)) for _ in range(20)]\n"
            "[t.start() for t in ts]\nprint(len(ts))")], cwd=tmp_path, timeout_s=60)
        assert (other.returncode, other.stdout.strip()) == (0, "20"), other.stderr
    finally:
        hog.kill()
        hog.wait()


def test_boxes_at_once_run_as_users_of_their_own_and_share_a_folder_they_both_write(tmp_path):
    """The object cache is written by every job's box: a directory one box made stays writable to
    another running at the same time as another user (their group, umask 002)."""
    if os.geteuid() != 0:
        pytest.skip("only a gate running as root gives each box a user of its own")
    shared = tmp_path / "cache"
    shared.mkdir()
    script = (f"import os, time\nos.makedirs({str(shared / 'ab')!r})\nopen({str(shared / 'ab' / 'x')!r}, 'w').write('1')"
              "\nprint(os.getuid(), flush=True)\ntime.sleep(60)")
    with box.popen(box.Box(writable=(shared,)), [sys.executable, "-c", script], cwd=tmp_path, stdout=subprocess.PIPE,
                   text=True) as first:
        _beside(first, shared, tmp_path)


def _beside(first: subprocess.Popen, shared: Path, tmp_path: Path) -> None:
    try:
        first_uid = int(first.stdout.readline())
        second = box.run(box.Box(writable=(shared,)), [sys.executable, "-c", (
            f"import os\nopen({str(shared / 'ab' / 'y')!r}, 'w').write('2')\nprint(os.getuid())")],
            cwd=tmp_path, timeout_s=60)
        assert second.returncode == 0, second.stderr
        assert first_uid != int(second.stdout) and box.box_uid() <= first_uid < box.box_uid() + box.BOX_UIDS
        assert (shared / "ab" / "y").read_text() == "2"
    finally:
        first.kill()
        first.wait()
