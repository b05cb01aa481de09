"""Repositories: one row per place (URL or local path), found by that place and named for people.

A repository's identity is its canonical URL (`gate.services.submissions.canonical_repo`), kept
unique by the database through `url_key`: the first submissions of a new repository racing each
other store one row (issue 12: they gave 500s on PostgreSQL and a second row splitting the history).
The name is what pages and messages show: `owner/name` for GitHub (the notifications act only on
those), a directory's name for a local path.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import select
from sqlalchemy.orm import Session

from gate.errors import StorageError
from gate.storage.db import Queries
from gate.storage.inserts import insert_unless_taken
from gate.storage.limits import max_length
from gate.storage.models import Repository, url_key

_TRIES = 3      # a conflict is either the same place (found next time) or its name (suffixed next time)


def find_repository(session: Session, url: str) -> Repository | None:
    """The repository at `url` (canonical), the one identity lookup."""
    return session.scalar(select(Repository).where(Repository.url_key == url_key(url)))


def _named(session: Session, name: str) -> Repository | None:
    return session.scalar(select(Repository).where(Repository.name == name))


def ensure_repository(session: Session, url: str, name: str) -> Repository:
    """The repository at `url`, inserted (not committed) when new; a name already taken by another
    place gets a suffix from the URL, within the column. Safe when requests race: one row per URL."""
    for _ in range(_TRIES):
        found = find_repository(session, url)
        if found is not None:
            return found
        if _named(session, name) is not None:   # same name, other place: a suffix, within the column
            suffix = f"-{hashlib.sha1(url.encode()).hexdigest()[:8]}"
            name = name[:max_length(Repository.name) - len(suffix)] + suffix
        new_id = insert_unless_taken(session, Repository, {"url": url, "url_key": url_key(url), "name": name})
        if new_id is not None:
            return session.get(Repository, new_id)
    raise StorageError(f"cannot store the repository {url}: its name {name!r} stays taken")


class Repositories(Queries):
    """`uow.repositories`."""

    def claim(self, url: str, full_name: str, default_branch: str) -> int:
        """A GitHub repository's id: the row is named `owner/name` (the GitHub API path) and points at
        the clone URL (flushed, not committed). An existing row is found by URL, else by that name; it
        takes the name unless another row holds it."""
        session = self._session
        repo = find_repository(session, url) or _named(session, full_name) or ensure_repository(session, url, full_name)
        if repo.name != full_name and _named(session, full_name) is None:
            repo.name = full_name
        repo.url, repo.default_branch = url, default_branch
        session.flush()
        return repo.id
