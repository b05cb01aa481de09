"""Issue 24, what the box sees: only what builds and runs need. Canary files planted where the host
keeps private things (the data folder, next to the gate's checkout, /var, /opt, /home) are not
readable from a real bwrap box; the gate's own package is; docs/security.md lists exactly the mounts
`gate.box_view` makes (the test reads the mounts the code builds)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from gate import box, box_view
from gate.nvidia import tools

ROOT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None or os.environ.get("GATE_BOX") == "off",
                                 reason="bubblewrap is not installed (apt install bubblewrap)")


@pytest.fixture
def canaries(tmp_path: Path):
    """Files the box must not read, one per place; removed afterwards (those outside tmp_path too)."""
    tag = uuid.uuid4().hex[:8]
    data_dir = tmp_path / "data"
    (data_dir / "mirrors").mkdir(parents=True)
    places = {"data folder": data_dir / "gate.db", "mirrors": data_dir / "mirrors" / "secret.pem",
              "next to the checkout": ROOT / f".env-canary-{tag}",
              "/var": Path(f"/var/lib/gate-canary-{tag}"), "/opt": Path(f"/opt/gate-canary-{tag}"),
              "/home": Path(f"/home/gate-canary-{tag}"), "/root": Path(f"/root/gate-canary-{tag}")}
    made = []
    for path in places.values():
        if path.parent.is_dir() and os.access(path.parent, os.W_OK):
            path.write_text(f"canary {tag}\n")
            made.append(path)
    yield {name: path for name, path in places.items() if path in made}, data_dir
    for path in made:
        path.unlink(missing_ok=True)


@needs_bwrap
def test_canaries_outside_the_list_are_not_readable_from_the_box(canaries, tmp_path):
    planted, data_dir = canaries
    assert {"data folder", "next to the checkout", "/var", "/opt"} <= set(planted)
    work = tmp_path / "job"
    (work / "out").mkdir(parents=True)
    (work / "k.cu").write_text("// the job's input\n")
    script = ("import json, sys, os\nseen = {}\n"
              "for name, path in json.loads(sys.argv[1]).items():\n"
              "    try:\n        seen[name] = open(path).read()\n"
              "    except OSError as exc:\n        seen[name] = type(exc).__name__\n"
              "import gate\nseen['gate'] = gate.__file__\n"
              "seen['input'] = open('k.cu').read()\n"
              "seen['checkout'] = sorted(os.listdir(os.path.dirname(os.path.dirname(gate.__file__))))\n"
              "print(json.dumps(seen))\n")
    import json

    spec = box.Box(writable=(work / "out",), readable=(work,), hidden=(data_dir,))
    out = box.run(spec, [sys.executable, "-c", script, json.dumps({k: str(v) for k, v in planted.items()})],
                  cwd=work, timeout_s=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    for name in planted:
        assert seen[name] in ("FileNotFoundError", "PermissionError"), (name, seen[name])
    assert seen["input"] == "// the job's input\n"
    assert seen["gate"].startswith(str(ROOT / "gate"))       # the gate's package is there...
    # ...and nothing else of its checkout, but the Python environment the box runs with, where it lies
    # inside the checkout (scripts/setup.sh makes `.venv` there)
    runtime = [] if ROOT not in Path(sys.prefix).resolve().parents else [Path(sys.prefix).resolve().relative_to(ROOT).parts[0]]
    assert seen["checkout"] == sorted(["gate", *runtime])


def _documented() -> dict[str, str]:
    """The reasons docs/security.md lists for what the box sees: `reason` -> the row's text."""
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## What the box sees", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z-]+)` \|(.*)$", section, re.M)}


def test_docs_list_exactly_the_mounts_the_box_makes(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    spec = box.Box(writable=(tmp_path / "out",), readable=(tmp_path / "in",), hidden=(tmp_path / "data",),
                   gpu=True)
    mounts = box.view(spec, tmp_path, box.environment())
    documented = _documented()
    assert set(documented) == set(box_view.REASONS)
    made = {m.why for m in mounts}
    assert made <= set(box_view.REASONS) and "" not in made
    # The system row names exactly the host directories the box binds whole.
    assert re.findall(r"`(/[a-z0-9]+)`", documented["system"]) == list(box_view.SYSTEM_DIRS)
    assert re.findall(r"`(/[a-z]+)`", documented["cover"]) == list(box_view.COVERED_DIRS)
    whole = {m.target for m in mounts if m.why == "system"}
    assert whole <= set(box_view.SYSTEM_DIRS)
    for target in ("/var", "/opt", "/home", str(ROOT)):
        assert not [m for m in mounts if m.how.startswith("--ro-bind") and m.target == target], target
    assert [m.target for m in mounts if m.why == "gate-package"][-1] == str(ROOT / "gate")


def test_a_toolchain_outside_the_system_dirs_is_bound_and_nothing_else_beside_it(tmp_path, monkeypatch):
    """A CUDA under /opt: its toolkit is in the view, its neighbours are not."""
    toolkit = tmp_path / "opt" / "cuda-13"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (toolkit / "bin" / "nvcc").chmod(0o755)
    (tmp_path / "opt" / "other-vendor").mkdir()
    monkeypatch.delenv("GATE_NVCC_PATH", raising=False)
    env = {**box.environment(), "PATH": f"{toolkit / 'bin'}:/usr/bin:/bin"}
    assert toolkit in box_view.toolchain_paths(env)
    (tmp_path / "job").mkdir()
    targets = {m.target for m in box.view(box.Box(), tmp_path / "job", env) if m.how.startswith("--ro-bind")}
    assert str(toolkit) in targets
    assert not [t for t in targets if Path(t) in (tmp_path, tmp_path / "opt", tmp_path / "opt" / "other-vendor")]


def test_the_nsight_compute_that_the_ncu_launcher_runs_is_bound_with_it(tmp_path, monkeypatch):
    """The toolkit's `bin/ncu` is a launcher that runs an Nsight Compute installed elsewhere (under
    /opt/nvidia on the device): with /opt hidden, every profile failed, so that install is in view."""
    toolkit, nsight = tmp_path / "cuda-13", tmp_path / "nvidia" / "nsight-compute"
    (toolkit / "bin").mkdir(parents=True)
    nsight.mkdir(parents=True)
    (toolkit / "bin" / "ncu").write_text("#!/bin/sh\n")
    (toolkit / "bin" / "ncu").chmod(0o755)
    monkeypatch.delenv("GATE_NCU_PATH", raising=False)
    monkeypatch.setattr(tools, "NSIGHT_COMPUTE_HOMES", (nsight, tmp_path / "absent"))
    paths = box_view.toolchain_paths({**box.environment(), "PATH": f"{toolkit / 'bin'}:/usr/bin:/bin"})
    assert toolkit in paths and nsight in paths and tmp_path / "absent" not in paths


@needs_bwrap
def test_the_servers_own_files_are_hidden_from_a_compile_box_whatever_binds_above_them(tmp_path, monkeypatch):
    """Issue 44: the data folder and the database under a folder the box binds (here the compile's
    working directory; in the issue a PYTHONPATH entry) were read by a submitted `#include`."""
    work = tmp_path / "work"
    data, database = work / "data", work / "gate.db"
    (data / "jobs").mkdir(parents=True)
    (data / "jobs" / "log.txt").write_text("another job's log\n")
    database.write_text("SQLite format 3\n")
    monkeypatch.setattr(box, "PRIVATE", set())
    box.keep_private([data, database])
    script = ("import os, sys\nprint(sorted(os.listdir(sys.argv[1])), repr(open(sys.argv[2]).read()))\n")
    argv = [sys.executable, "-c", script, str(data), str(database)]
    out = box.run(box.for_compile(argv, work), argv, cwd=work, timeout_s=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] ''"          # the folder is there and empty, the file empty
