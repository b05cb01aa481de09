"""Held histories saved to disk: a restarted server refreshes the saved history instead of reading
every trace again, and anything it cannot trust is read from the database."""

from __future__ import annotations

import threading
from datetime import datetime

import numpy as np
import pytest
from sqlalchemy import text

from gate.storage.series_cache import SeriesCache
from gate.storage.series_snapshot import SeriesSnapshots
from tests.storage.test_series_cache import GPU, KERNEL, TRACE, _held, _judge, _revisions

OTHER = ("latency_median_us", "s1", "baseline")


def ANY_DATABASE(witness):  # noqa: ANN001, ANN201, N802
    return True


@pytest.fixture
def saved(monkeypatch):  # noqa: ANN001, ANN201
    """Snapshots written at once, so a test sees them (the server writes them in a thread)."""
    def save_now(self, kernel, gpu_kind, held, witness):  # noqa: ANN001, ANN202
        self.save(kernel, gpu_kind, held, witness)
        return threading.current_thread()
    monkeypatch.setattr(SeriesSnapshots, "save_later", save_now)


def test_a_new_process_refreshes_the_saved_history_without_reading_it_again(session_factory, tmp_path,  # noqa: ANN001
                                                                            saved):
    ids = _revisions(session_factory, 4)
    for i, v in zip(ids[:2], (1.0, 2.0)):
        _judge(session_factory, i, v)
    first = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    assert _held(session_factory, first).traces[TRACE].values.tolist() == [1.0, 2.0]
    _judge(session_factory, ids[2], 3.0, "reject")
    restarted = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    held = _held(session_factory, restarted)
    assert restarted.full_reads == 0                              # the saved one, brought up to date
    assert held.revision_ids.tolist() == ids[:3]
    assert held.traces[TRACE].values.tolist() == [1.0, 2.0, 3.0]
    assert held.traces[TRACE].environments.tolist() == ["", "", ""]
    assert [held.verdicts[c] for c in held.verdict_codes.tolist()] == ["accept", "accept", "reject"]
    fresh = _held(session_factory, SeriesCache())
    assert held.order.line.tolist() == fresh.order.line.tolist()


def test_a_late_result_below_the_saved_rows_reads_everything_again(session_factory, tmp_path, saved):  # noqa: ANN001
    ids = _revisions(session_factory, 3)
    _judge(session_factory, ids[0], 1.0)
    _judge(session_factory, ids[2], 3.0)
    _held(session_factory, SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a")))
    _judge(session_factory, ids[1], 2.0)                          # an ancestor judged late
    restarted = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    assert _held(session_factory, restarted).traces[TRACE].values.tolist() == [1.0, 2.0, 3.0]
    assert restarted.full_reads == 1


def test_a_trace_not_saved_is_read_and_saved_with_the_rest(session_factory, tmp_path, saved):  # noqa: ANN001
    ids = _revisions(session_factory, 2)
    _judge(session_factory, ids[0], 1.0)
    _held(session_factory, SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a")))
    restarted = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    with session_factory() as s:
        held = restarted.history(s.connection(), KERNEL, GPU, [TRACE, OTHER])
    assert set(held.traces) == {TRACE, OTHER} and restarted.full_reads == 0
    assert SeriesSnapshots(tmp_path, "db-a").load(KERNEL, GPU, ANY_DATABASE).traces.keys() == {TRACE, OTHER}


def test_another_database_or_a_damaged_file_is_never_trusted(session_factory, tmp_path, saved):  # noqa: ANN001
    ids = _revisions(session_factory, 2)
    _judge(session_factory, ids[0], 1.0)
    _held(session_factory, SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a")))
    assert SeriesSnapshots(tmp_path, "db-b").load(KERNEL, GPU, ANY_DATABASE) is None
    for path in tmp_path.rglob("*.pickle"):
        path.write_bytes(b"not a history")
    restarted = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    assert _held(session_factory, restarted).traces[TRACE].values.tolist() == [1.0]
    assert restarted.full_reads == 1


def test_environments_come_back_as_the_same_keys(tmp_path, session_factory, saved):  # noqa: ANN001
    ids = _revisions(session_factory, 1)
    _judge(session_factory, ids[0], 1.0)
    cache = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    held = _held(session_factory, cache)
    envs = np.array(["H100 | 550 | locked", "", "H100 | 550 | locked"], dtype=object)
    series = held.traces[TRACE]
    held.traces[TRACE] = type(series)(np.arange(3), np.ones(3), "us", envs)
    SeriesSnapshots(tmp_path, "db-a").save(KERNEL, GPU, held, ())
    back = SeriesSnapshots(tmp_path, "db-a").load(KERNEL, GPU, ANY_DATABASE).traces[TRACE].environments
    assert back.dtype == object and back.tolist() == envs.tolist()


def test_a_database_made_again_at_the_same_address_is_read_not_taken_from_the_file(session_factory, tmp_path,  # noqa: ANN001
                                                                                    saved):
    """A demo replayed into a fresh file has the same ids and counts, so a refresh alone finds nothing
    new: the saved rows' witness (their verdicts' times) tells the databases apart."""
    ids = _revisions(session_factory, 2)
    for i, v in zip(ids, (1.0, 2.0)):
        _judge(session_factory, i, v)
    _held(session_factory, SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a")))
    with session_factory() as s:             # the same rows, made again later with other figures
        s.execute(text("UPDATE verdicts SET created_at = :at"), {"at": datetime(2031, 1, 1)})
        s.execute(text("UPDATE metrics SET value = value + 10"))
        s.commit()
    restarted = SeriesCache(snapshots=SeriesSnapshots(tmp_path, "db-a"))
    assert _held(session_factory, restarted).traces[TRACE].values.tolist() == [11.0, 12.0]
    assert restarted.full_reads == 1
