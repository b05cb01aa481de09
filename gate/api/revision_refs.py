"""What a person types to name a revision on the pages (`/compare?a=&b=`, `/revisions/{ref}`): `resolve`."""

from __future__ import annotations

import re

from gate.storage.unit import UnitOfWork

MIN_PREFIX = 4                    # git's own shortest abbreviation
MAX_ID_DIGITS = 6                 # a longer run of digits is read as a sha prefix first
HEX = re.compile(r"[0-9a-fA-F]+")
HOW = (f"give a revision id, a commit sha (full, or a unique prefix of at least {MIN_PREFIX} hex digits) "
       "or a branch name")


class RefProblem(ValueError):
    """A reference that names no revision, or several commits; `str()` is the message a page shows."""


def resolve(uow: UnitOfWork, ref: str | None) -> int:
    """The id of the revision `ref` names. Numbers of up to six digits are ids; hex strings are
    sha prefixes (the newest revision of that commit); anything else, or a hex string no sha starts
    with, is a branch (its newest revision)."""
    text = (ref or "").strip()
    if not text:
        raise RefProblem(f"no revision given: {HOW}")
    if not text.isprintable():      # PostgreSQL refuses a NUL even in a comparison (a 500, issue 24)
        raise RefProblem(f"a revision reference has no control characters: {HOW}")
    if text.isdigit() and len(text) <= MAX_ID_DIGITS and uow.revisions.exists(int(text)):
        return int(text)
    if HEX.fullmatch(text) and len(text) >= MIN_PREFIX:
        found = uow.revisions.with_sha_prefix(text)
        shas = list(dict.fromkeys(sha for _, sha in found))
        if len(shas) == 1:
            return found[0][0]
        if len(shas) > 1:
            shown = ", ".join(sha[:12] for sha in shas[:5])
            raise RefProblem(f"{text!r} is ambiguous: it starts the shas of {len(shas)}"
                             f"{'+' if len(found) >= 10 else ''} commits ({shown}); give more digits")
    on_branch = uow.revisions.newest_on_branch(text)
    if on_branch is not None:
        return on_branch
    raise RefProblem(f"no revision matches {text!r}: {HOW}")
