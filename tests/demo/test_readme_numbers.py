"""Every count the README states about the demo is the demo's own: its commits, the regressions it
rejects on a GPU and the revisions of the kernel its picture shows are counted from
`gate.demo.flashcore_commits.STEPS`, so a step added to the demo fails here until the README says so."""

from __future__ import annotations

import re
from pathlib import Path

from gate.demo.flashcore_commits import STEPS

README = Path(__file__).resolve().parents[2] / "README.md"
WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen twenty").split()
COUNTED = re.compile(rf"\b({'|'.join(WORDS)}|\d+) (real commits|regressions|revisions)\b")


def demo_counts() -> dict[str, int]:
    """What each counted noun is, in the demo: its commits, its steps expected to be rejected on a GPU,
    and the revisions of flashcore_wmma (the README's picture), from the step that adds it on."""
    rejected = sum(any(v.startswith("reject") for v in step.expect.values()) for step in STEPS)
    wmma_from = next(i for i, step in enumerate(STEPS) if "flashcore_wmma" in step.expect)
    return {"real commits": len(STEPS), "regressions": rejected, "revisions": len(STEPS) - wmma_from}


def stated(text: str) -> list[tuple[str, int]]:
    """(noun, number) of every count in a paragraph of the README that speaks of the demo."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        if "demo" in paragraph:
            for m in COUNTED.finditer(" ".join(paragraph.split())):
                number = int(m[1]) if m[1].isdigit() else WORDS.index(m[1])
                found.append((m[2], number))
    return found


def test_the_readmes_counts_of_the_demo_are_the_demos_own():
    counts = stated(README.read_text())
    assert {noun for noun, _ in counts} == {"real commits", "regressions", "revisions"}, counts
    expected = demo_counts()
    assert [(noun, n) for noun, n in counts if n != expected[noun]] == [], expected


def test_the_check_reads_numbers_in_words_and_digits():
    assert stated("The demo's 4 revisions and\nits twelve real commits.\n\nNot here: nine regressions.") == \
        [("revisions", 4), ("real commits", 12)]
