"""Repositories: one row per place (URL or local path), found by that place and named for people.

A repository's identity is its canonical URL (`gate.services.submissions.canonical_repo`); the name
is what pages and messages show: `owner/name` for GitHub (the notifications act only on those),
a directory's name for a local path.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import select
from sqlalchemy.orm import Session

from gate.storage.limits import max_length
from gate.storage.models import Repository


def find_repository(session: Session, url: str) -> Repository | None:
    """The repository at `url` (canonical), the one identity lookup."""
    return session.scalar(select(Repository).where(Repository.url == url))


def _named(session: Session, name: str) -> Repository | None:
    return session.scalar(select(Repository).where(Repository.name == name))


def ensure_repository(session: Session, url: str, name: str) -> Repository:
    """The repository at `url`, added (not yet flushed) when new; a name already taken by another
    place gets a suffix from the URL."""
    found = find_repository(session, url)
    if found is not None:
        return found
    if _named(session, name) is not None:   # same name, other place: a suffix, within the column
        suffix = f"-{hashlib.sha1(url.encode()).hexdigest()[:8]}"
        name = name[:max_length(Repository.name) - len(suffix)] + suffix
    found = Repository(url=url, name=name)
    session.add(found)
    return found


def claim_repository(session: Session, url: str, full_name: str, default_branch: str) -> Repository:
    """A GitHub repository: the row is named `owner/name` (the GitHub API path) and points at the
    clone URL. An existing row is found by URL, else by that name; it takes the name unless
    another row holds it."""
    repo = find_repository(session, url) or _named(session, full_name)
    if repo is None:
        repo = Repository(name=full_name, url=url)
        session.add(repo)
    elif repo.name != full_name and _named(session, full_name) is None:
        repo.name = full_name
    repo.url, repo.default_branch = url, default_branch
    session.flush()
    return repo
