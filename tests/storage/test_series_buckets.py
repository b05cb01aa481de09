"""Bucketing a long history: bucket widths, bucket statistics and the worst verdict per bucket."""

from __future__ import annotations

import numpy as np

from gate.storage.series_buckets import (
    bucket_series, bucket_width, verdict_vocabulary, worst_places,
)


def test_bucket_width_is_one_while_the_history_fits():
    assert bucket_width(first_id=5, last_id=404, revisions=400, max_points=400) == 1


def test_bucket_width_covers_the_id_span_in_at_most_max_points_buckets():
    width = bucket_width(first_id=1, last_id=10_000, revisions=10_000, max_points=400)
    assert width == 25
    assert (10_000 - 1) // width + 1 <= 400


def test_bucket_width_rounds_up_an_uneven_span():
    assert bucket_width(first_id=1, last_id=1001, revisions=1001, max_points=400) == 3


def test_bucket_series_gives_mean_spread_count_and_newest_revision():
    b = bucket_series(np.array([10, 11, 12, 14]), np.array([1.0, 3.0, 2.0, 7.0]), first_id=10,
                      width=3)
    assert b.newest_ids.tolist() == [12, 14]
    assert b.mean.tolist() == [2.0, 7.0]
    assert b.low.tolist() == [1.0, 7.0]
    assert b.high.tolist() == [3.0, 7.0]
    assert b.count.tolist() == [3, 1]


def test_bucket_series_skips_empty_buckets():
    b = bucket_series(np.array([1, 2, 9]), np.array([1.0, 1.0, 5.0]), first_id=1, width=2)
    assert b.newest_ids.tolist() == [2, 9]


def test_bucket_series_of_width_one_keeps_every_row():
    b = bucket_series(np.array([4, 4, 5]), np.array([1.0, 2.0, 3.0]), first_id=4, width=1)
    assert b.newest_ids.tolist() == [4, 4, 5]
    assert b.count.tolist() == [1, 1, 1]


def test_bucket_series_of_no_rows_is_empty():
    assert bucket_series(np.array([], dtype=np.int64), np.array([]), 1, 5).newest_ids.size == 0


def test_verdict_vocabulary_puts_unknown_verdicts_after_the_known_ones():
    vocab = verdict_vocabulary(["accept", "mystery", "reject", "mystery"])
    assert vocab[-1] == "mystery"
    assert vocab.index("reject") < vocab.index("accept") < vocab.index("mystery")


def _worst(order: list[tuple[int, str]], first_id: int, width: int, at: list[int]) -> list[str]:
    """The verdict each point of `at` shows; `order` holds consecutive line places from `first_id`."""
    vocab = verdict_vocabulary(v for _, v in order)
    codes = np.array([vocab.index(v) for _, v in order])
    return [vocab[c] for c in codes[worst_places(codes, width, np.array(at) - first_id)]]


def test_a_buckets_point_shows_its_newest_revision_of_the_worst_verdict():
    codes = np.array([4, 1, 4, 1, 4, 4, 0])      # accept, reject, accept, reject, accept | accept, error
    assert worst_places(codes, 5, np.array([4, 6])).tolist() == [3, 6]
    assert worst_places(codes, 1, np.arange(7)).tolist() == list(range(7))


def test_worst_verdict_keeps_a_reject_among_accepts():
    order = [(10, "accept"), (11, "reject"), (12, "accept"), (13, "accept"), (14, "inconclusive")]
    assert _worst(order, first_id=10, width=3, at=[12, 14]) == ["reject", "inconclusive"]


def test_worst_verdict_ranks_unknown_verdicts_last():
    order = [(1, "mystery"), (2, "accept"), (3, "mystery")]
    assert _worst(order, first_id=1, width=2, at=[2, 3]) == ["accept", "mystery"]


def test_worst_verdict_of_single_revisions_is_each_verdict():
    order = [(7, "accept"), (8, "error")]
    assert _worst(order, first_id=7, width=1, at=[7, 8]) == ["accept", "error"]
