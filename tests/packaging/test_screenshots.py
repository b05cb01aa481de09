"""The README's screenshots show the rules of today: each PNG records the gate commit that made its
database's verdicts and the GPU they were measured on (scripts/screenshots.py writes them as tEXt
chunks), and the last commit that changed the rule code (gate/verdict/) must be that commit or one of
its ancestors. Pictures older than the rules fail here; regenerate them on the device (the reason
below says how)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from scripts.png_text import read_text, write_text

REPO = Path(__file__).resolve().parents[2]
# sample-*.png are of the synthetic sample (`gate demo --sample`): no GPU made them, so they are not the
# README pictures this test dates.
SHOTS = sorted(p for p in (REPO / "docs" / "screenshots").glob("*.png") if not p.name.startswith("sample-"))
RULE_CODE = "gate/verdict"
COMMIT_KEY, GPU_KEY = "gate-commit", "gpu"          # scripts/screenshots.py
REGENERATE = ("screenshots predate the rule code; regenerate on the device: scripts/device-check.sh demo "
              "leaves demo-gate.db, then python scripts/screenshots.py --database-url sqlite:///<copy of "
              "demo-gate.db> --gate-commit <the commit the device ran> and commit docs/screenshots/")
UNRECORDED = [p.name for p in SHOTS if COMMIT_KEY not in read_text(p)]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)


def needs_history() -> None:
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("no git history here (a copy of the tree without .git)")


def older_than_the_rules(commit: str) -> str | None:
    """Why pictures made by gate `commit` predate the rule code, or None when they do not."""
    rules = git("log", "-1", "--format=%H", "--", RULE_CODE).stdout.strip()
    assert rules, f"no commit touches {RULE_CODE}"
    if git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        return f"gate commit {commit} is not in this repository's history"
    if git("merge-base", "--is-ancestor", rules, commit).returncode != 0:
        return f"made by gate {commit[:12]}, before the rule code changed in {rules[:12]}"
    return None


@pytest.mark.xfail(bool(UNRECORDED), reason=REGENERATE, strict=True)
def test_the_readme_screenshots_are_no_older_than_the_rule_code():
    needs_history()
    assert SHOTS, "docs/screenshots/ holds no PNG"
    assert not UNRECORDED, f"no gate commit recorded in {UNRECORDED}"
    for shot in SHOTS:
        meta = read_text(shot)
        gpu = meta.get(GPU_KEY, "")
        assert gpu and gpu not in ("cpu", "any"), f"{shot.name}: no GPU recorded ({gpu!r})"
        problem = older_than_the_rules(meta[COMMIT_KEY])
        assert problem is None, f"{shot.name}: {problem}: {REGENERATE}"


def test_pictures_from_before_the_last_rule_change_are_told_apart_from_current_ones():
    needs_history()
    rules = git("log", "-1", "--format=%H", "--", RULE_CODE).stdout.strip()
    assert older_than_the_rules(rules) is None
    assert older_than_the_rules(git("rev-parse", "HEAD").stdout.strip()) is None
    assert "before the rule code changed" in older_than_the_rules(git("rev-parse", f"{rules}^").stdout.strip())
    assert "not in this repository's history" in older_than_the_rules("0" * 40)


def test_png_text_round_trips_and_replaces_its_keywords(tmp_path):
    png = tmp_path / "shot.png"
    shutil.copy(SHOTS[0], png)
    before, original = png.read_bytes(), read_text(png)
    write_text(png, {COMMIT_KEY: "a" * 40, GPU_KEY: "NVIDIA H100 80GB HBM3"})
    write_text(png, {COMMIT_KEY: "b" * 40})
    assert read_text(png) == {**original, COMMIT_KEY: "b" * 40, GPU_KEY: "NVIDIA H100 80GB HBM3"}
    # The chunks go right after the 33 bytes of signature and header; the image itself is untouched
    # (the committed pictures carry text chunks of their own, which are replaced).
    after = png.read_bytes()
    image = before[before.index(b"IDAT") - 4:]
    assert after[:33] == before[:33] and after.endswith(image)


def test_png_text_refuses_what_is_no_png_and_text_it_cannot_hold(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"GIF89a")
    with pytest.raises(ValueError, match="not a PNG file"):
        read_text(bad)
    png = tmp_path / "shot.png"
    shutil.copy(SHOTS[0], png)
    with pytest.raises(ValueError, match="Latin-1 only"):
        write_text(png, {GPU_KEY: "GPU \u2603"})
