"""No input can stop start-up (issue 24): `ssh://[127.0.0.1]:22/x` (ValueError in the planner), a
gate.toml nested 40k levels deep (RecursionError in tomllib) and a tree with a 1500-level directory
(RecursionError in shutil.rmtree) each left their revision queued, start-up planned it again and
the server never started; as local paths the same inputs were answered 500."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select

from gate.services.submissions import submit
from gate.storage.db import make_engine, make_session_factory
from gate.storage.unit import UnitOfWork
from gate.storage.models import Revision
from gate.sources.tree_removal import remove_tree
from tests.security.conftest import GATE_TOML, git, make_repo

MALFORMED = "ssh://[127.0.0.1]:22/x"
NESTING = 40_000
TREE_DEPTH = 1500


def _nested_repo(path: Path) -> None:
    make_repo(path, {"gate.toml": "a = " + "[" * NESTING + "]" * NESTING + "\n"})


def _deep_repo(path: Path) -> None:
    """A repository whose commit holds a 1500-level directory (made one level at a time through
    directory descriptors: `os.makedirs` itself recurses per level)."""
    make_repo(path, {"gate.toml": GATE_TOML, "attn.cu": "// v1\n"})
    fd = os.open(path, os.O_RDONLY)
    for _ in range(TREE_DEPTH):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    with open(os.open("leaf.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd), "w") as leaf:
        leaf.write("at the bottom\n")
    os.close(fd)
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "a 1500-level directory")


def test_start_up_breakers_are_refused_by_name_and_a_restart_with_them_queued_starts(make_server, tmp_path):
    nested, deep = tmp_path / "nested", tmp_path / "deep"
    _nested_repo(nested)
    _deep_repo(deep)
    try:
        _attack(make_server, nested, deep)
    finally:                # pytest's own clean-up of old temporary folders recurses per level too
        remove_tree(deep)


def _attack(make_server, nested: Path, deep: Path) -> None:  # noqa: ANN001 (the fixture's factory)
    server = make_server(GATE_ALLOW_LOCAL_REPOS="1").start()

    # Through the API: each a clear answer naming the problem, never a 500.
    malformed = server.submit(MALFORMED, "main")
    assert malformed.status_code == 422 and "malformed repository URL" in malformed.text, malformed.text
    too_deep = server.submit(str(nested))
    assert too_deep.status_code == 422 and "nested too deeply" in too_deep.text, too_deep.text
    tree = server.submit(str(deep))
    assert tree.status_code == 422 and "deeper than 128 folders" in tree.text, tree.text
    server.stop()

    # The state an older gate left behind: the same inputs queued without jobs.
    engine = make_engine(server.env["GATE_DATABASE_URL"])
    with make_session_factory(engine)() as session:
        left = [submit(UnitOfWork(session), repo=repo, sha="HEAD", force=True).revision_id
                for repo in (MALFORMED, str(nested), str(deep))]
    server.start()          # returns once /healthz answers: start-up was not stopped by them
    server.timed_get("/healthz")                   # answers, promptly (conftest: `Server.prompt`)
    ends = {revision_id: server.wait_done(revision_id) for revision_id in left}
    assert "malformed repository URL" in ends[left[0]]["error"]
    assert "nested too deeply" in ends[left[1]]["error"]
    assert "deeper than 128 folders" in ends[left[2]]["error"]
    with make_session_factory(engine)() as session:         # nothing left queued for the next start
        assert not session.scalars(select(Revision.id).where(Revision.status == "queued")).all()
    engine.dispose()
    server.assert_no_server_paths()
