"""`gate demo`'s repository: FlashCore's revisions as real commits, edited at the kernel's own marks."""

import subprocess

import pytest

from gate.demo.flashcore_commits import STEPS, build_demo_repo, project_root
from gate.demo.replay import DemoRow, summary
from gate.errors import GateError
from gate.pipeline import run
from gate.manifest.load import load_manifest

WGMMA = "kernels/flashcore/wgmma.cu"
WMMA = "kernels/flashcore/wmma.cu"


def show(repo, sha: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{sha}:{path}"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout


def exists(repo, sha: str, path: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{sha}:{path}"], cwd=repo, capture_output=True).returncode == 0


def checkout(repo, sha: str, path):
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(path), sha], cwd=repo, check=True)
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("demo") / "flashcore"
    return repo, [sha for sha, _ in build_demo_repo(repo)]


def test_the_demo_repo_commits_scalar_wmma_unpadded_fixed_slower_reverted_wgmma_persistent_turns_lead_one_stage(demo):
    repo, shas = demo
    assert len(shas) == len(STEPS) == 11
    log = subprocess.run(["git", "log", "--format=%s", "--reverse"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert log == [step.message for step in STEPS]
    assert "flashcore_wmma" not in show(repo, shas[0], "gate.toml")
    assert "flashcore_wmma" in show(repo, shas[1], "gate.toml")
    pads = [show(repo, sha, WMMA).count("constexpr int kSmemPad = 8;") for sha in shas[1:]]
    assert pads == [1, 0, 1, 1, 1, 1, 1, 1, 1, 1]           # dropped in commit 3, restored in commit 4
    assert "constexpr int kSmemPad = 0;" in show(repo, shas[2], WMMA)
    assert "Recompute the probabilities from their exponents" in show(repo, shas[4], WMMA)
    assert "Recompute the probabilities" not in show(repo, shas[3], WMMA)
    assert show(repo, shas[5], WMMA) == show(repo, shas[3], WMMA)   # commit 6 reverts commit 5 exactly


PERSISTENT_ON = "static constexpr bool kPersistent = true;"
PERSISTENT_OFF = "static constexpr bool kPersistent = false;"
THREE_TURNS = "\n  return p.head_dim == 64 ? Config::kC3N128P : Config::kC2N128;"
TWO_TURNS = "\n  return p.head_dim == 64 ? Config::kC2N128P : Config::kC2N128;"
LEAD_ON = "static constexpr bool kCausalLead = true;"
LEAD_OFF = "static constexpr bool kCausalLead = false;"


def test_the_hopper_kernel_arrives_in_commit_7_as_first_written_and_commits_8_9_10_make_it_this_repositorys(demo):
    repo, shas = demo
    assert [exists(repo, sha, WGMMA) for sha in shas] == [False] * 6 + [True] * 5
    ours = (project_root() / WGMMA).read_text()
    assert ours.count(PERSISTENT_ON) == 1 and ours.count(THREE_TURNS) == 1 and ours.count(LEAD_ON) == 1
    no_lead = ours.replace(LEAD_ON, LEAD_OFF)
    two_turns = no_lead.replace(THREE_TURNS, TWO_TURNS)
    assert show(repo, shas[6], WGMMA) == two_turns.replace(PERSISTENT_ON, PERSISTENT_OFF)
    assert show(repo, shas[7], WGMMA) == two_turns
    assert show(repo, shas[8], WGMMA) == no_lead
    assert show(repo, shas[9], WGMMA) == ours
    assert STEPS[6].message.startswith("Add the Hopper kernel: wgmma + TMA")
    assert STEPS[6].expect == {"flashcore_wgmma": "accept (new kernel)"}
    assert STEPS[7].message.startswith("Persistent blocks") and STEPS[7].expect == {}
    assert STEPS[8].message.startswith("Three consumer warpgroups take turns") and STEPS[8].expect == {}
    assert STEPS[9].message.startswith("Start causal tiles early") and STEPS[9].expect == {}
    assert STEPS[10].expect == {"flashcore_wgmma": "reject: latency regression"}


@pytest.mark.parametrize(("step", "texts", "match"), [
    (7, ("// no grid choice here\n", f"{PERSISTENT_OFF}\n{PERSISTENT_OFF}\n"),
     "expected one `static constexpr bool kPersistent"),
    (8, ("// no launcher here\n", f"{TWO_TURNS}{TWO_TURNS}\n"), r"expected one `return p.head_dim == 64 \? Config::"),
    (9, ("// no causal tiles here\n", f"{LEAD_OFF}\n{LEAD_ON}\n"), "expected one `static constexpr bool kCausalLead"),
    (10, ("// no ring here\n", "static constexpr int kStages = 2;\nstatic constexpr int kStages = 3;\n"),
     "expected one `static constexpr int kStages"),
], ids=["persistent", "turns", "lead", "one_stage"])
def test_each_wgmma_edit_needs_exactly_one_marked_line(tmp_path, step, texts, match):
    edit = STEPS[step].apply
    (tmp_path / "kernels/flashcore").mkdir(parents=True)
    path = tmp_path / WGMMA
    for text in texts:
        path.write_text(text)
        with pytest.raises(GateError, match=match):
            edit(tmp_path, tmp_path)


def test_commit_11_changes_only_the_ring_depth_of_wgmma(demo):
    repo, shas = demo
    before, after = show(repo, shas[9], WGMMA), show(repo, shas[10], WGMMA)
    assert before.count("static constexpr int kStages = D * (kFp8 ? 1 : 2) <= 128 ? 3 : 2;") == 1
    assert after.count("static constexpr int kStages = 1;") == 1
    assert after == before.replace("static constexpr int kStages = D * (kFp8 ? 1 : 2) <= 128 ? 3 : 2;", "static constexpr int kStages = 1;")
    diff = subprocess.run(["git", "diff", "--stat", shas[9], shas[10]], cwd=repo, capture_output=True, text=True,
                          check=True).stdout
    assert WGMMA in diff and "1 file changed" in diff
    body = subprocess.run(["git", "log", "-1", "--format=%b", shas[10]], cwd=repo, capture_output=True, text=True,
                          check=True).stdout
    assert "Why it is slower" in body                 # the commit says what the gate will find


def test_every_demo_manifest_validates_and_gates_wgmma_on_sm_90a_only(demo, tmp_path):
    repo, shas = demo
    for i, sha in enumerate(shas):
        manifest = load_manifest(checkout(repo, sha, tmp_path / f"c{i}"))
        assert [k.name for k in manifest.kernels][-1] == ("flashcore_wgmma" if i >= 6 else
                                                          "flashcore_wmma" if i >= 1 else "flashcore_scalar")
    (wgmma,) = [k for k in manifest.kernels if k.name == "flashcore_wgmma"]
    assert wgmma.arch == ["sm_90a"] and wgmma.dtypes == ["float16"] and len(wgmma.shapes) == 3
    assert wgmma.gates.require_sass == ["HGMMA"] and wgmma.gates.max_spill_bytes == 0
    assert wgmma.gates.max_latency_regression_pct == 3


@pytest.mark.parametrize(("gpu", "runs"), [("sm_90", True), ("sm_80", False), ("sm_89", False), ("sm_100", False)])
def test_the_demo_wgmma_kernel_runs_on_sm_90_gpus_only_and_says_so_elsewhere(demo, tmp_path, monkeypatch, gpu, runs):
    repo, shas = demo
    (wgmma,) = [k for k in load_manifest(checkout(repo, shas[-1], tmp_path / "c")).kernels if k.name == "flashcore_wgmma"]
    monkeypatch.setattr(run.tc, "device_arch", lambda: gpu)
    why = run.not_for_this_gpu(wgmma.name, wgmma.arch)
    assert why == ("" if runs else f"not run: flashcore_wgmma targets sm_90a only; this GPU is {gpu}")


def test_the_summary_gives_each_kernel_its_own_expectation():
    row = DemoRow(3, "89d2f94ff2aa", "Save shared memory", {"flashcore_wmma": "reject: bank conflicts"},
                  [("flashcore_scalar", "accept", "accept: all 6 rules pass"),
                   ("flashcore_wmma", "reject", "reject: max_bank_conflict_pct b1_h8_s512_d64: 86.3 % > 10 %")])
    lines = summary([row]).splitlines()
    assert "accept" in lines[1] and "reject: bank conflicts" not in lines[1]
    assert "reject: bank conflicts" in lines[2] and "86.3 %" in lines[2]
