"""A clean stop ends the server's git children (issue 44: after a SIGTERM a `git clone` of a silent
remote lived on 457 s). The planner's workers are daemon threads that the interpreter drops at
exit, so their git children were orphaned; now the stop ends them, and the revisions they were
planning stay queued for the next start (no `error`)."""

from __future__ import annotations

import time
from pathlib import Path

from tests.api.serve_process import wait_for
from tests.security.silent_remote import SilentRemote
from tests.security.test_silent_remotes import FETCH_SETTINGS


def _gits_of(port: int) -> list[int]:
    """The pids of git processes whose command line names the remote's port."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and b"git" in Path(argv[0].decode(errors="replace")).name.encode() \
                    and any(f":{port}/".encode() in arg for arg in argv):
                found.append(int(entry.name))
    return found


def test_sigterm_ends_the_git_children_and_keeps_their_revisions_queued(make_server):
    with SilentRemote() as remote:
        server = make_server(**FETCH_SETTINGS).start()
        ids = [server.submit(remote.url(f"t{i}"), "main").json()["id"] for i in range(3)]
        gits = wait_for(lambda: _gits_of(remote.port), 30, what="git to reach the silent remote")
        started = time.monotonic()
        server.proc.terminate()
        server.proc.wait(30)
        stopped_s = time.monotonic() - started
        time.sleep(0.5)
        alive = [pid for pid in gits if Path(f"/proc/{pid}").exists() and _state(pid) != "Z"]
        assert not alive and not _gits_of(remote.port), (alive, _gits_of(remote.port))
        server.proc = None

        server.start()
        statuses = [server.revision(i)["status"] for i in ids]
        assert statuses == ["queued"] * len(ids), [server.revision(i) for i in ids]
        server.stop()
    print(f"gate serve stopped {stopped_s:.1f} s after SIGTERM; {len(gits)} git processes ended with it")


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"
