"""Revision details shared by the page's traces: cut once, restorable exactly."""

from __future__ import annotations

from gate.figures.revision_table import SHARED, share_revision_details


def _trace(rows: list[list]) -> dict:
    return {"type": "scatter", "x": list(range(len(rows))), "customdata": rows}


def _restore(trace: dict, table: dict[str, list[str]]) -> list[list]:
    """What gate.js does before drawing."""
    return [[row[0], *table[str(row[0])], *row[1:]] for row in trace["customdata"]]


def test_details_move_into_one_table_and_restore_exactly():
    a = [[7, "abcd1234", "2025-01-01 09:00", "Tile K", "accept", 25],
         [9, "ef567890", "2025-01-02 09:00", "Swizzle", "reject", 25]]
    b = [[9, "ef567890", "2025-01-02 09:00", "Swizzle", "reject", 24]]
    figures, table = share_revision_details([{"data": [_trace(a)], "layout": {}},
                                             {"data": [_trace(b)], "layout": {"title": "t"}}])
    assert table == {"7": ["abcd1234", "2025-01-01 09:00", "Tile K"],
                     "9": ["ef567890", "2025-01-02 09:00", "Swizzle"]}
    assert figures[0]["data"][0]["customdata"] == [[7, "accept", 25], [9, "reject", 25]]
    assert figures[0]["data"][0]["meta"] == {"revisions": SHARED}
    assert _restore(figures[0]["data"][0], table) == a
    assert _restore(figures[1]["data"][0], table) == b
    assert figures[1]["layout"] == {"title": "t"}


def test_traces_without_customdata_are_untouched():
    trace = {"type": "scatter", "x": [1], "y": [2]}
    figures, table = share_revision_details([{"data": [trace], "layout": {}}])
    assert figures[0]["data"][0] is trace
    assert table == {}
