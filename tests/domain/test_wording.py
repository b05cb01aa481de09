"""The words every surface uses: units, GPU kinds, reasons beside their outcome, counts (issue 13)."""

from __future__ import annotations

import pytest

from gate.domain.wording import format_value, gpu_words, plural, progress_line, reason_beside


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (45230.0, "us", "45.23 ms"), (58.123, "us", "58.12 µs"), (2_500_000.0, "us", "2.5 s"),
    (32768, "B", "32 KiB"), (28672, "bytes", "28 KiB"), (1023, "B", "1023 B"), (0, "B", "0 B"),
    (34.0, "%", "34 %"), (96, "registers", "96 registers"), (0.00098, "abs err", "0.00098 abs err"),
    (400000.0, "TFLOP/s", "400\u202f000 TFLOP/s"), (None, "us", "n/a"), ("HMMA x4", "", "HMMA x4"),
])
def test_values_read_in_the_unit_a_person_uses_never_as_an_exponent(value, unit, shown):  # noqa: ANN001
    assert format_value(value, unit) == shown
    assert "e+" not in format_value(value, unit)


def test_routing_kinds_are_explained_and_gpu_names_kept():
    assert gpu_words("any") == "any GPU (the first free one)"
    assert gpu_words("cpu").startswith("no GPU")
    assert gpu_words("NVIDIA H200") == "NVIDIA H200"


@pytest.mark.parametrize(("outcome", "reason", "shown"), [
    ("not_run", "not run: no CUDA device", "no CUDA device"),
    ("not_run", "not run", ""),
    ("not_run", "not run: not run", ""),
    ("fail", "bank conflicts 12 % is over the limit of 10 %", "bank conflicts 12 % is over the limit of 10 %"),
    ("done", "done: incomplete", "incomplete"),
])
def test_a_reason_beside_its_outcome_does_not_repeat_it(outcome, reason, shown):  # noqa: ANN001
    assert reason_beside(outcome, reason) == shown


def test_progress_says_the_state_once_and_counts_agree_in_number():
    assert progress_line("done", "done: incomplete") == "done: incomplete"
    assert progress_line("running", "bench round 3/40") == "running: bench round 3/40"
    assert progress_line("queued", None) == "queued"
    assert (plural(1, "revision"), plural(2, "revision")) == ("1 revision", "2 revisions")


def test_checked_calls_words_state_the_smallest_wrong_share_caught_at_99_percent():
    from gate.domain.wording import checked_calls_words

    assert checked_calls_words(146) == ("146 calls checked in full: a kernel wrong on 3.1 % of its calls (at random) "
                                        "or more is caught with 99 % probability")
    assert "wrong on 37 % of its calls" in checked_calls_words(10)     # 1 - 0.01^(1/10) = 0.369
