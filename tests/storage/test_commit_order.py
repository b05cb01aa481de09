"""The order a kernel's history is drawn in (issue 45): the graph's, then commit time, then id."""

from __future__ import annotations

import numpy as np

from gate.storage.commit_order import commit_order

NAN = np.nan


def _order(ids, positions, times, on_branch=None):  # noqa: ANN001, ANN202
    on = [True] * len(ids) if on_branch is None else on_branch
    return commit_order(np.array(ids), np.array(positions, dtype=float), np.array(times, dtype=float),
                        np.array(on))


def _line_ids(ids, order) -> list[int]:  # noqa: ANN001
    return [ids[r] for r in order.line.tolist()]


def test_positions_order_the_line_whatever_the_ids_and_commit_times_say():
    ids = [1, 2, 3, 4]                       # HEAD submitted first, its ancestors after
    order = _order(ids, [4, 3, 1, 2], [10, 20, 40, 30])
    assert _line_ids(ids, order) == [3, 4, 2, 1]
    assert order.rank.tolist() == [3, 2, 0, 1]


def test_a_tie_of_positions_is_broken_by_commit_time_then_id():
    ids = [1, 2, 3, 4]                       # 2 and 3: one depth (a rewritten branch); 1 and 4: one commit measured twice
    order = _order(ids, [2, 3, 3, 2], [50, 70, 60, 50])
    assert _line_ids(ids, order) == [1, 4, 3, 2]


def test_without_any_position_the_line_is_in_commit_time_order_then_id():
    ids = [1, 2, 3, 4]
    order = _order(ids, [NAN] * 4, [30, 10, NAN, 10])
    assert _line_ids(ids, order) == [3, 2, 4, 1]   # no commit time first; 2 and 4 tie: by id


def test_a_revision_without_a_position_follows_the_positioned_ones_committed_before_it():
    ids = [1, 2, 3, 4, 5]                    # 1 and 2 planned before positions were kept
    order = _order(ids, [NAN, NAN, 2, 1, 3], [15, 35, 20, 10, 30])
    # 1 (t 15) after position 1 (t 10); 2 (t 35) after position 3 (t 30)
    assert _line_ids(ids, order) == [4, 1, 3, 5, 2]


def test_revisions_off_the_branch_are_not_on_the_line_and_sit_beside_their_depth():
    ids = [1, 2, 3, 4, 5]
    order = _order(ids, [1, 2, 3, 3, 9], [1, 2, 3, 4, 5], on_branch=[True, True, True, False, False])
    assert _line_ids(ids, order) == [1, 2, 3]
    assert order.rank.tolist() == [0, 1, 2, -1, -1]
    assert order.beside.tolist() == [0, 1, 2, 2, 2]   # depth 3 beside the line's depth 3; 9 beside its last


def test_off_branch_revisions_alone_make_no_line():
    order = _order([1, 2], [5, 6], [1, 2], on_branch=[False, False])
    assert order.line.size == 0
    assert order.rank.tolist() == [-1, -1] and order.beside.tolist() == [0, 0]
