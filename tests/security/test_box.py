"""The box for submitted code (issue 12, item 2), on the CPU machine: each limit, the hidden host, and
the two compiles that escaped it before (`#include "/etc/passwd"`, `#include "/dev/zero"`)."""

import os
import signal
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gate import box
from gate.compiling.static import LOG_NAME, run_static
from gate.domain import KernelSpec, StageStatus
from tests.patience import HANG_S

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                                reason="bubblewrap is not installed (apt install bubblewrap)")
MiB = 1 << 20


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "out").mkdir()
    return tmp_path


def boxed(work: Path, script: str, limits: box.Limits = box.Limits(), timeout_s: float = 30,
          **kw) -> subprocess.CompletedProcess:
    spec = box.Box(writable=(work / "out",), readable=(work,), limits=limits, **kw)
    return box.run(spec, [sys.executable, "-c", script], cwd=work, timeout_s=timeout_s)


def test_the_box_runs_as_an_unprivileged_user_without_secrets(work, monkeypatch):
    monkeypatch.setenv("GATE_DATABASE_URL", "postgresql://gate:secret@db/gate")
    monkeypatch.setenv("GATE_GITHUB_TOKEN", "ghp_secret")
    out = boxed(work, "import os; print(os.getuid(), os.geteuid()); print(sorted(os.environ))")
    assert out.returncode == 0, out.stderr
    uid, euid = out.stdout.split()[:2]
    assert int(uid) != 0 and int(euid) != 0
    assert "secret" not in out.stdout and "GATE_DATABASE_URL" not in out.stdout


def test_the_box_has_no_network(work):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        out = boxed(work, f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('reached')")
    assert out.returncode != 0 and "reached" not in out.stdout


def test_the_host_is_read_only_and_its_private_places_are_empty(work, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    (data_dir / "gate.db").write_text("the database")
    spec = box.Box(writable=(work / "out",), readable=(work,), hidden=(data_dir,))
    script = ("import os, pathlib\n"
              f"print(os.path.exists({str(data_dir / 'gate.db')!r}), os.listdir('/root'), os.listdir('/home'))\n"
              "print(pathlib.Path('/etc/passwd').read_text().strip())\n"
              f"pathlib.Path({str(work / 'out' / 'ok')!r}).write_text('ok')\n"
              "try:\n    pathlib.Path('/usr/gate-box-was-here').write_text('x')\nexcept OSError as e:\n    print(e.errno)\n"
              f"try:\n    pathlib.Path({str(work / 'mine')!r}).write_text('x')\nexcept OSError as e:\n    print(e.errno)\n")
    out = box.run(spec, [sys.executable, "-c", script], cwd=work, timeout_s=30)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    exists, rest = lines[0].split(" ", 1)
    assert exists == "False" and rest.endswith(" []")           # the data dir and /home: empty
    python = f"{sys.base_prefix}/"                              # /root: only a Python installed there
    assert all(python.startswith(f"/root/{entry}/") for entry in eval(rest[:-3]))
    assert lines[1].startswith("gate:x:") and "root" not in lines[1]
    assert lines[2:] == ["30", "30"]                      # EROFS outside the writable paths
    assert (work / "out" / "ok").read_text() == "ok"


def test_memory_is_bounded(work):
    limits = box.Limits(memory_bytes=256 * MiB)
    out = boxed(work, "b = bytearray(1 << 30); print('allocated')", limits)
    assert out.returncode != 0 and "MemoryError" in out.stderr


def test_cpu_time_is_bounded(work):
    out = boxed(work, "while True: pass", box.Limits(cpu_s=1), timeout_s=HANG_S)
    # Killed by a signal (SIGXCPU, then SIGKILL), not by the wall-time limit, which raises instead:
    # the loop never ends by itself, so only the CPU limit can have ended it, however busy the machine.
    assert -out.returncode in (signal.SIGXCPU, signal.SIGKILL), out.returncode


def test_file_size_is_bounded(work):
    out = boxed(work, f"open({str(work / 'out' / 'big')!r}, 'wb').write(b'x' * (4 << 20))",
                box.Limits(file_bytes=1 * MiB))
    assert out.returncode != 0
    assert (work / "out" / "big").stat().st_size <= 1 * MiB


def test_processes_are_bounded(work):
    script = ("import threading, time\nn = 0\ntry:\n    for _ in range(400):\n"
              "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); n += 1\n"
              "except RuntimeError:\n    pass\nprint(n)")
    out = boxed(work, script, box.Limits(processes=64))
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) < 64


def test_wall_time_kills_the_whole_box(work):
    marker = f"{time.time():.6f}"
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        boxed(work, f"import subprocess, time; subprocess.Popen(['sleep', '100', {marker!r}]); time.sleep(100)",
              timeout_s=2)
    assert time.monotonic() - started < 100 / 2        # the box's sleeps: 100 s unless it was killed
    time.sleep(0.5)
    leftovers = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _has_arg(p, marker)]
    assert leftovers == []


def _has_arg(cmdline: Path, arg: str) -> bool:
    try:
        return arg.encode() in cmdline.read_bytes().split(b"\0")
    except OSError:
        return False


# ---- the compiles of issue 12 ------------------------------------------------------------------

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def _repo(work: Path, source: str) -> Path:
    repo = work / "repo"
    repo.mkdir()
    (repo / "k.cu").write_text(source)
    return repo


@nvcc
def test_an_included_host_file_never_reaches_the_ptxas_log(work):
    host_first_line = Path("/etc/passwd").read_text().splitlines()[0]
    repo = _repo(work, '#include "/etc/passwd"\n__global__ void k() {}\n')
    res = run_static(KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"]), repo, work / "out")
    log = (work / "out" / LOG_NAME).read_text()
    assert res.status is StageStatus.FAILED
    assert host_first_line not in log and host_first_line not in res.reason


@nvcc
def test_including_dev_zero_stops_at_the_memory_limit(work, monkeypatch):
    monkeypatch.setattr(box, "COMPILE_LIMITS", box.Limits(memory_bytes=512 * MiB, cpu_s=60))
    repo = _repo(work, '#include "/dev/zero"\n__global__ void k() {}\n')
    res = run_static(KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"]), repo, work / "out")
    # The gate cannot tell a bomb from a heavy template source: its limit stopped it, and it says so
    # (the verdict is `error`, never accept), without caching the failure as the source's.
    assert res.status is StageStatus.ERROR and "GATE_COMPILE_MEMORY_GIB" in res.reason, res.reason
    assert "timed out" not in res.reason       # stopped by its memory limit, not by a clock


@pytest.mark.parametrize("host_dir", ["/dev", "/etc", "/usr/lib", "/"])
def test_a_host_directory_is_never_handed_to_the_box_user(host_dir, monkeypatch):
    """A compile with `-o /dev/null` once asked for /dev to be writable; it must never be chowned."""
    chowned = []
    monkeypatch.setattr(box.os, "lchown", lambda path, uid, gid: chowned.append(path))   # never for real
    monkeypatch.setattr(box.os, "geteuid", lambda: 0)
    with pytest.raises(box.BoxError):
        box.prepare_writable(box.Box(writable=(Path(host_dir),)))
    assert chowned == []
    assert box.for_compile(["nvcc", "-c", "k.cu", "-o", "/dev/null"], Path("/tmp")).writable == ()


def test_a_box_run_from_the_root_directory_still_hides_the_host(work):
    """cwd=/ once re-bound the whole host over the covers (/root readable, /dev without devices)."""
    script = "import os; open('/dev/urandom', 'rb').read(4); print(os.listdir('/home'))"
    out = box.run(box.Box(gpu=True), [sys.executable, "-c", script], cwd=Path("/"), timeout_s=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_box_that_cannot_be_set_up_is_the_gates_error_not_the_commands(work):
    """On the GPU machine bwrap once failed to make a mount point; the compile was reported as the
    kernel's compile error. It is a BoxError (a GateError: the stage ends in `error`, never `reject`)."""
    missing = Path("/tmp") / f"gate-box-missing-{time.time_ns()}"
    with pytest.raises(box.BoxError, match="could not be set up"):
        box.run(box.Box(readable=(missing,)), ["true"], cwd=work, timeout_s=30)


def test_relative_paths_are_read_against_the_commands_cwd_not_the_gates(work, tmp_path_factory, monkeypatch):
    # `nvcc -I.` once handed bwrap a bare "." read against the gate's own cwd: when that cwd sat in a
    # private directory (a checkout under /tmp), the bind covered the box's root and set-up failed.
    gate_cwd = tmp_path_factory.mktemp("gate-cwd")
    monkeypatch.chdir(gate_cwd)
    (work / "inc.h").write_text("#define VALUE 7\n")
    spec = box.for_compile(["cc", "-I.", "-o", "out/x"], work)
    assert work in spec.readable and Path(".") not in spec.readable
    out = box.run(box.Box(writable=(Path("out"),), readable=(Path("."),)),
                  [sys.executable, "-c", "import pathlib; print(pathlib.Path('inc.h').read_text().split()[2]);"
                   "pathlib.Path('out/ok').write_text('ok')"], cwd=work, timeout_s=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "7" and (work / "out" / "ok").read_text() == "ok"


def test_a_link_reads_the_objects_it_names_from_a_private_directory(work, tmp_path_factory):
    # On the GPU machine the object cache sat under /tmp (a private directory the box covers): the link
    # named its objects there and ld answered "cannot find ... .o". The box now reads each input file.
    tmp_path = tmp_path_factory.mktemp("elsewhere")          # under /tmp, outside the command's cwd
    # ... and the cache had stored it as mkstemp made it (0600, the gate's user): the box's user could
    # not read it ("Permission denied"). Stored through the cache, as the build stores it.
    from gate.compiling.build_cache import ObjectCache

    fresh = tmp_path / "fresh.o"
    fresh.write_text("object\n")
    obj = ObjectCache(tmp_path / "cache").put("ab" + "cdef" * 4, fresh, "log")
    argv = [sys.executable, "-c", "import sys, pathlib; print(pathlib.Path(sys.argv[1]).read_text().strip())",
            str(obj), "-o", "out/x.so", f"-L{tmp_path / 'cache'}"]
    spec = box.for_compile(argv, work)
    assert obj in spec.readable and tmp_path / "cache" in spec.readable
    assert not any(p.name == "x.so" for p in spec.readable)      # the output is written, not read
    out = box.run(spec, argv, cwd=work, timeout_s=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "object"
