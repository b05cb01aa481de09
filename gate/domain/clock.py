"""The one clock of stored times: naive UTC, as the database stores them (SQLite has no zones)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
