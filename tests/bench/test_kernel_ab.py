"""bench/kernel_ab.py refuses what it cannot compare before it imports torch or looks for a GPU."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "kernel_ab.py"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_two_revisions_with_one_name_are_refused():
    res = run(".", ".")
    assert res.returncode == 1
    assert "two revisions share a name: checkout, checkout" in res.stderr


def test_a_folder_that_is_not_a_flashcore_tree_is_named(tmp_path):
    before = tmp_path / "before"
    (before / "kernels" / "flashcore").mkdir(parents=True)
    (before / "kernels" / "flashcore" / "wgmma.cu").write_text("// a kernel, but no binding\n")
    res = run(str(before), ".")
    assert res.returncode == 1
    assert f"{before}: not a FlashCore tree (no extension/flashcore_binding.cpp)" in res.stderr
    assert "Traceback" not in res.stderr
