"""Revision details shipped once per page: short sha, commit date, first line cut to fit."""

from __future__ import annotations

from datetime import datetime

from gate.figures.revision_table import MESSAGE_CHARS, revision_table


def test_revision_table_keys_details_by_revision_id():
    table = revision_table({7: ("abcd1234" * 5, datetime(2025, 1, 1, 9, 0), "Tile K"),
                            9: ("ef567890" * 5, None, "Swizzle")})
    assert table == {"7": ["abcd1234", "2025-01-01 09:00", "Tile K"],
                     "9": ["ef567890", "", "Swizzle"]}


def test_revision_table_cuts_long_messages_with_an_ellipsis():
    [(_, _, message)] = revision_table({1: ("a" * 40, None, "x" * 100)}).values()
    assert len(message) == MESSAGE_CHARS and message.endswith("…")


def test_a_commit_message_reaches_the_hover_as_text_not_html():
    """Plotly renders hover text as HTML: a link in a commit message must arrive escaped (issue 24)."""
    table = revision_table({7: ("a" * 40, None, 'fix <a href="https://evil.example">here</a> & more')})
    message = table["7"][2]
    assert "<a" not in message and "&lt;a href=" in message and "&amp; more" in message
