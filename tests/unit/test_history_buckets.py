"""Bucketing a long history: bucket widths and the worst verdict per bucket."""

from __future__ import annotations

from gate.storage.history_buckets import bucket_width, worst_verdict_per_bucket


def test_bucket_width_is_one_while_the_history_fits():
    assert bucket_width(first_id=5, last_id=404, revisions=400, max_points=400) == 1


def test_bucket_width_covers_the_id_span_in_at_most_max_points_buckets():
    width = bucket_width(first_id=1, last_id=10_000, revisions=10_000, max_points=400)
    assert width == 25
    assert (10_000 - 1) // width + 1 <= 400


def test_bucket_width_rounds_up_an_uneven_span():
    assert bucket_width(first_id=1, last_id=1001, revisions=1001, max_points=400) == 3


def test_worst_verdict_per_bucket_keeps_a_reject_among_accepts():
    order = [(10, "accept"), (11, "reject"), (12, "accept"), (13, "accept"), (14, "inconclusive")]
    assert worst_verdict_per_bucket(order, first_id=10, width=3) == {0: "reject", 1: "inconclusive"}


def test_worst_verdict_per_bucket_ranks_unknown_verdicts_last():
    order = [(1, "mystery"), (2, "accept"), (3, "mystery")]
    assert worst_verdict_per_bucket(order, first_id=1, width=2) == {0: "accept", 1: "mystery"}


def test_worst_verdict_per_bucket_of_single_revisions_is_each_verdict():
    order = [(7, "accept"), (8, "error")]
    assert worst_verdict_per_bucket(order, first_id=7, width=1) == {0: "accept", 1: "error"}
