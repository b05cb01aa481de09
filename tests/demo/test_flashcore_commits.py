"""`gate demo`'s repository: FlashCore's revisions as real commits, edited at the kernel's own marks."""

import subprocess

from gate.demo.flashcore_commits import STEPS, build_demo_repo
from gate.demo.replay import DemoRow, summary


def show(repo, sha: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{sha}:{path}"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout


def test_the_demo_repo_commits_scalar_wmma_unpadded_fixed_and_slower(tmp_path):
    repo = tmp_path / "flashcore"
    shas = [sha for sha, _ in build_demo_repo(repo)]
    assert len(shas) == len(STEPS) == 5
    log = subprocess.run(["git", "log", "--format=%s", "--reverse"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == [step.message for step in STEPS]
    assert "flashcore_wmma" not in show(repo, shas[0], "gate.toml")
    assert "flashcore_wmma" in show(repo, shas[1], "gate.toml")
    pads = [show(repo, sha, "kernels/flashcore/wmma.cu").count("constexpr int kSmemPad = 8;") for sha in shas[1:]]
    assert pads == [1, 0, 1, 1]                       # dropped in commit 3, restored in commit 4
    assert "constexpr int kSmemPad = 0;" in show(repo, shas[2], "kernels/flashcore/wmma.cu")
    slower = show(repo, shas[4], "kernels/flashcore/wmma.cu")
    assert "Recompute the probabilities from their exponents" in slower
    assert "Recompute the probabilities" not in show(repo, shas[3], "kernels/flashcore/wmma.cu")


def test_the_summary_gives_each_kernel_its_own_expectation():
    row = DemoRow(3, "89d2f94ff2aa", "Save shared memory", {"flashcore_wmma": "reject: bank conflicts"},
                  [("flashcore_scalar", "accept", "accept: all 6 rules pass"),
                   ("flashcore_wmma", "reject", "reject: max_bank_conflict_pct b1_h8_s512_d64: 86.3 % > 10 %")])
    lines = summary([row]).splitlines()
    assert "accept" in lines[1] and "reject: bank conflicts" not in lines[1]
    assert "reject: bank conflicts" in lines[2] and "86.3 %" in lines[2]
