"""Rows read as columns through the DB-API cursor match what SQLAlchemy reads."""

from __future__ import annotations

from sqlalchemy import bindparam, select

from gate.storage.columns import fetch_columns
from gate.storage.models import Repository, Revision

_REVISIONS = (select(Revision.id, Revision.sha).where(Revision.id > bindparam("after"))
              .order_by(Revision.id))


def test_fetch_columns_matches_an_ordinary_read(session_factory):  # noqa: ANN001
    with session_factory() as s:
        repo = Repository(name="r", url="/r")
        s.add_all(Revision(repository=repo, sha=f"{i:040x}") for i in range(3))
        s.commit()
        rows = s.execute(_REVISIONS, {"after": 0}).all()
        ids, shas = fetch_columns(s.connection(), _REVISIONS, {"after": rows[0][0]})
    assert list(ids) == [r[0] for r in rows[1:]]
    assert list(shas) == [r[1] for r in rows[1:]]


def test_fetch_columns_gives_one_empty_column_each_when_nothing_matches(session_factory):  # noqa: ANN001
    with session_factory() as s:
        assert fetch_columns(s.connection(), _REVISIONS, {"after": 0}) == [(), ()]
