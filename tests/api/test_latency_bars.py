"""The compare page's latency bars: a kernel that only one of the two revisions has is said, not an
empty row (the demo's wgmma kernel, added between the two compared commits, drew three blank rows)."""

from __future__ import annotations

from gate.api.page_views import latency_bars
from gate.read_models.compare import CompareRow


def _row(a: float | None, b: float | None) -> CompareRow:
    return CompareRow("k", "H200", "latency_median_us", "s1", "candidate", "us", "lower", a, b)


def test_a_kernel_in_one_revision_only_gets_a_bar_that_says_so():
    changes, texts = latency_bars([_row(100.0, 103.0), _row(None, 50.0), _row(40.0, None)])
    assert changes[0] == 3.0 and texts[0] == "+3.0 %"
    assert changes[1:] == [0.0, 0.0]
    assert texts[1:] == ["no figure before", "no figure after"]
