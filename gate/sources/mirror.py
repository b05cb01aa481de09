"""Fetch a revision into an isolated workspace through a bare mirror cache per repository.

`Mirror(root)` keeps one `git clone --mirror` per repository under `root`, keyed by a hash of the
repository's URL (or resolved local path), and refreshes it with `git fetch`. A checkout is a
`git archive` export of the exact sha: the workspace holds no `.git`, so the code under test cannot
reach the mirror, and archive members are extracted with tarfile's `data` filter (no links or paths
out of the workspace).

Every git call takes an argument list; user-given revisions are refused when they start with `-`
and are passed after `--end-of-options`, so they are never read as options. A repository is fetched
only when `FetchPolicy` (gate/sources/policy.py) allows it; a clone or fetch is killed past
the policy's time or size limit. A checkout streams `git archive` into the workspace (a large blob
never sits in the server's memory) and stops past `MAX_CHECKOUT_BYTES`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from gate.domain.job import Checkout
from gate.errors import SourceError
from gate.sources.policy import FetchPolicy
from gate.sources.streams import Tail, run_capped

_FULL_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
GIT_TIMEOUT_S = 600.0
MAX_CHECKOUT_BYTES = 1 << 30    # one revision's tree, uncompressed
# Folders within folders in one revision's tree. tarfile's `data` filter resolves every member's
# full path (one lstat per level), so a 1500-level tree cost minutes of a planner's time (issue 24).
MAX_TREE_DEPTH = 128
MAX_GIT_OUTPUT_BYTES = 1 << 20  # what a plumbing command (rev-parse, show -s, ...) may print
MAX_COMMIT_INFO_BYTES = 64 << 10   # author, date, parents and the message: the rest is cut
TRUNCATED = "\n[message cut: longer than the gate keeps]"
_ERROR_CHARS = 2000
_lock = threading.Lock()
_fetching: set[subprocess.Popen] = set()      # clones and fetches running now
_ended: set[int] = set()                      # the pids `end_fetches` killed


def git_cause(stderr: str) -> str:
    """git's reason for failing, at most `_ERROR_CHARS` characters: every fatal/error line first
    (the cause is often not the last line), then the distinct warning/remote lines (a remote may
    repeat one thousands of times), else the last lines."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [line for line in lines if line.lower().startswith(("fatal:", "error:"))]
    context = list(dict.fromkeys(line for line in lines if line.lower().startswith(("warning:", "remote:"))))
    text = " | ".join(causes + context or lines[-3:])
    return text[:_ERROR_CHARS]


def _git(args: list[str], *, cwd: Path | None = None, timeout_s: float = GIT_TIMEOUT_S,
         env: dict[str, str] | None = None, max_stdout_bytes: int = MAX_GIT_OUTPUT_BYTES,
         truncate: bool = False) -> subprocess.CompletedProcess:
    """Run git with an argument list; its stdout as text, read up to `max_stdout_bytes` (past it,
    git is killed: an error, or with `truncate` the first part is kept); raise SourceError with
    git's own message on failure."""
    try:
        ran = run_capped(["git", *args], cwd=cwd, timeout_s=timeout_s, max_stdout_bytes=max_stdout_bytes,
                         env={**os.environ, "GIT_TERMINAL_PROMPT": "0", **(env or {})})
    except FileNotFoundError as exc:
        raise SourceError("git is not installed") from exc
    if ran.timed_out:
        raise SourceError(f"git {args[0]} timed out after {timeout_s:.0f} s")
    if ran.truncated and not truncate:
        raise SourceError(f"git {args[0]} printed more than {max_stdout_bytes} bytes")
    if ran.returncode != 0 and not ran.truncated:
        raise SourceError(f"git {args[0]} failed (exit {ran.returncode}): {git_cause(ran.stderr) or 'no message'}")
    return subprocess.CompletedProcess(["git", *args], ran.returncode, ran.stdout.decode(errors="replace"),
                                       ran.stderr)


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _transfer(args: list[str], target: Path, policy: FetchPolicy, *, cwd: Path | None = None) -> None:
    """A clone or fetch under the policy's limits: killed past `timeout_s`, or once `target` grows
    beyond `max_bytes` (checked twice a second while git runs)."""
    cmd = ["git", *policy.git_config(), *args]
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
                                start_new_session=True)
    except FileNotFoundError as exc:
        raise SourceError("git is not installed") from exc
    stderr = Tail(proc.stderr)       # a remote may send `remote:` lines without end
    with _lock:
        _fetching.add(proc)
    deadline, why = time.monotonic() + policy.timeout_s, ""
    while proc.poll() is None:
        if time.monotonic() > deadline:
            why = f"timed out after {policy.timeout_s:.0f} s"
        elif target.exists() and _dir_bytes(target) > policy.max_bytes:
            why = f"exceeded {policy.max_bytes} bytes"
        if why:
            os.killpg(proc.pid, 9)
            proc.wait()
            break
        time.sleep(0.5)
    text = stderr.text()
    proc.stderr.close()
    with _lock:
        _fetching.discard(proc)
        if proc.pid in _ended:
            _ended.discard(proc.pid)
            raise FetchStopped(f"git {args[0]} ended: the server is stopping")
    if not why and proc.returncode == 0 and _dir_bytes(target) > policy.max_bytes:
        why = f"exceeded {policy.max_bytes} bytes"      # a local clone can finish between two checks
    if why:
        raise SourceError(f"git {args[0]} {why}")
    if proc.returncode != 0:
        raise SourceError(f"git {args[0]} failed (exit {proc.returncode}): {git_cause(text) or 'no message'}")


class FetchStopped(SystemExit):
    """The server is stopping and `end_fetches` ended this clone or fetch: no fault of the repository,
    so nothing is recorded (a revision stays queued, a running job is re-queued at the next start).
    A SystemExit, so that no `except Exception` turns it into an error and a thread it ends ends quietly."""


def end_fetches() -> None:
    """End every clone and fetch still running, each with its process group (a server's clean stop):
    the planner's threads are daemons, and their git children outlived the server (issue 44: a
    `git clone` of a silent remote lived on 457 s after a SIGTERM)."""
    with _lock:
        ending = list(_fetching)
        _ended.update(proc.pid for proc in ending)
    for proc in ending:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def check_rev(rev: str) -> str:
    """Refuse revisions git could read as an option or that carry odd characters."""
    if not rev or rev.startswith("-") or any(c.isspace() or ord(c) < 32 for c in rev):
        raise SourceError(f"refusing revision {rev!r}")
    return rev


class Mirror:
    """Bare mirrors of the repositories the gate has seen, one directory each under `root`."""

    def __init__(self, root: Path, policy: FetchPolicy | None = None):
        self.root = Path(root)
        # The mirrors are the gate's own clones, private repositories' included: never gated themselves.
        self.policy = (policy or FetchPolicy.from_env()).protecting(self.root)

    @classmethod
    def _checked_local(cls, repo: str) -> Path | None:
        """`_local`; a local directory that is not a git repository is named as such (not as a missing revision)."""
        local = cls._local(repo)
        if local and not (local / "HEAD").is_file() and not (local / ".git").exists():
            raise SourceError(f"{repo} is not a git repository")
        return local

    @staticmethod
    def _local(repo: str) -> Path | None:
        path = Path(repo)
        return path.resolve() if "://" not in repo and path.is_dir() else None

    def path(self, repo: str) -> Path:
        """The mirror's folder: named by a hash of the repository (a local one by its resolved path)."""
        local = self._local(repo)
        canonical = str(local) if local else repo.rstrip("/")
        return self.root / f"{hashlib.sha256(canonical.encode()).hexdigest()[:20]}.git"

    def holds(self, repo: str) -> bool:
        """Whether this repository was mirrored here before (the planner serves such ones first)."""
        return (self.path(repo) / "HEAD").exists()

    @contextmanager
    def _locked(self, repo: str) -> Iterator[Path]:
        """One writer per mirror: concurrent jobs of one repository wait for each other's fetch."""
        self.root.mkdir(parents=True, exist_ok=True)
        mirror = self.path(repo)
        with open(mirror.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield mirror
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def update(self, repo: str) -> Path:
        """Clone the mirror on first use, else fetch every ref; return the mirror's path."""
        self.policy.check(repo)
        local = self._checked_local(repo)
        url = str(local) if local else repo
        with self._locked(repo) as mirror:
            if not (mirror / "HEAD").exists():
                try:
                    _transfer(["clone", "--mirror", "--quiet", "--", url, str(mirror)], mirror, self.policy)
                except (SourceError, FetchStopped):
                    shutil.rmtree(mirror, ignore_errors=True)     # no half-cloned mirror stays
                    raise
            else:
                _transfer(["fetch", "--prune", "--quiet", "origin"], mirror, self.policy, cwd=mirror)
        return mirror

    def resolve(self, repo: str, rev: str) -> str:
        """The full sha of `rev`. A local path is asked directly (its HEAD is the user's HEAD).

        A commit never changes: a full sha the mirror already holds, or a local revision whose commit
        it holds, is answered without a fetch (a fetch per submission made planning ~0.5 s each)."""
        check_rev(rev)
        self.policy.check(repo)
        local = self._checked_local(repo)
        if _FULL_SHA.match(rev) and self._has(self.path(repo), rev):
            return rev
        if local is None:
            return self._rev_parse(self.update(repo), rev, repo)
        sha = self._rev_parse(local, rev, repo)
        mirror, held = self._holding(repo, sha)
        if not held:      # a commit reachable from no ref (e.g. a detached HEAD) is fetched by its sha
            with self._locked(repo):
                _transfer(["fetch", "--quiet", "origin", sha], mirror, self.policy, cwd=mirror)
        return sha

    @staticmethod
    def _rev_parse(where: Path, rev: str, repo: str) -> str:
        try:
            out = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], cwd=where)
        except SourceError as exc:
            raise SourceError(f"revision {rev!r} does not exist in {repo}") from exc
        return out.stdout.strip()

    @staticmethod
    def _has(mirror: Path, sha: str) -> bool:
        if not (mirror / "HEAD").exists():
            return False
        try:
            _git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=mirror)
        except SourceError:
            return False
        return True

    def _holding(self, repo: str, sha: str) -> tuple[Path, bool]:
        """The mirror, fetched once more when it lacks `sha`, and whether it holds `sha` now."""
        mirror = self.path(repo)
        if self._has(mirror, sha):
            return mirror, True
        mirror = self.update(repo)
        return mirror, self._has(mirror, sha)

    def _mirror_with(self, repo: str, sha: str) -> Path:
        if not _FULL_SHA.match(sha):
            raise SourceError(f"expected a full sha, got {sha!r} (resolve it first)")
        mirror, held = self._holding(repo, sha)
        if not held:
            raise SourceError(f"commit {sha} does not exist in {repo}")
        return mirror

    def checkout(self, repo: str, sha: str, workspace: Path) -> Checkout:
        """Export the tree at `sha` into `workspace` (created; must be empty or absent)."""
        mirror = self._mirror_with(repo, sha)
        workspace.mkdir(parents=True, exist_ok=True)
        if any(workspace.iterdir()):
            raise SourceError(f"workspace {workspace} is not empty")
        _export(mirror, sha, workspace)
        return Checkout(sha=sha, path=str(workspace))

    def commit_info(self, repo: str, sha: str) -> dict:
        """`author`, `message`, `committed_at` (aware datetime) and `parent_sha` (None for a root)."""
        mirror = self._mirror_with(repo, sha)
        shown = _git(["show", "-s", "--format=%an <%ae>%x00%cI%x00%P%x00%B", "--end-of-options", sha],
                     cwd=mirror, max_stdout_bytes=MAX_COMMIT_INFO_BYTES, truncate=True)
        fields = shown.stdout.split("\x00", 3)
        if len(fields) < 4:
            raise SourceError(f"commit {sha}: its author and parents take more than {MAX_COMMIT_INFO_BYTES} bytes")
        author, committed, parents, message = fields
        if shown.returncode != 0:      # cut: a message may be any size, the gate keeps its start
            message = message.rstrip() + TRUNCATED
        return {
            "author": author,
            "message": message.strip(),
            "committed_at": datetime.fromisoformat(committed.strip()),
            "parent_sha": parents.split()[0] if parents.split() else None,
        }

    def commit_place(self, repo: str, sha: str, branch: str) -> tuple[int, bool]:
        """(first-parent depth of `sha`, whether it lies on `branch`'s first-parent line).

        A local repository is asked directly (its branch is the user's, the mirror's may be older);
        otherwise the mirror, fetched once more when the commit is not on the branch it holds (a
        push's commit may be newer than the mirror's branch)."""
        check_rev(branch)
        local = self._local(repo)
        where = local if local is not None else self._mirror_with(repo, sha)
        place = first_parent_place(where, sha, branch)
        if local is None and not place[1]:
            place = first_parent_place(self.update(repo), sha, branch)
        return place


def first_parent_place(where: Path, sha: str, branch: str) -> tuple[int, bool]:
    """`sha`'s first-parent depth (a root commit is 1) in the repository at `where`, and whether
    `branch`'s tip reaches it by first parents only: tip~k is `sha` for k = the depths' difference.
    A branch that does not exist there holds nothing."""
    depth = _first_parent_count(where, sha)
    tip = f"refs/heads/{branch}"
    try:
        tip_depth = _first_parent_count(where, tip)
    except SourceError:
        return depth, False
    if tip_depth < depth:
        return depth, False
    back = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{tip}~{tip_depth - depth}^{{commit}}"],
                cwd=where)
    return depth, back.stdout.strip() == sha


def _first_parent_count(where: Path, rev: str) -> int:
    out = _git(["rev-list", "--first-parent", "--count", "--end-of-options", rev], cwd=where)
    return int(out.stdout.strip())


def _export(mirror: Path, sha: str, workspace: Path) -> None:
    """Stream `git archive` of `sha` into `workspace` (tarfile's `data` filter: no links or paths out),
    refusing a tree larger than `MAX_CHECKOUT_BYTES` or deeper than `MAX_TREE_DEPTH` folders."""
    proc = subprocess.Popen(["git", "archive", "--format=tar", "--end-of-options", sha], cwd=mirror,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    tail = Tail(proc.stderr)
    total, error = 0, None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                total += member.size
                if total > MAX_CHECKOUT_BYTES:
                    error = f"commit {sha}: the tree is larger than {MAX_CHECKOUT_BYTES} bytes"
                    break
                if member.name.strip("/").count("/") >= MAX_TREE_DEPTH:
                    error = (f"commit {sha}: {member.name[:60]}... lies deeper than {MAX_TREE_DEPTH} "
                             "folders, more than the gate checks out")
                    break
                try:
                    tar.extract(member, workspace, filter="data")
                except tarfile.FilterError as exc:
                    error = f"commit {sha}: refusing archive member: {exc}"
                    break
    except tarfile.TarError as exc:
        error = f"commit {sha}: unreadable archive: {exc}"
    finally:
        if error:
            proc.kill()
        else:
            while proc.stdout.read(1 << 16):   # the archive's trailing blocks, so that git exits by itself
                pass
        proc.wait()
        stderr = tail.text()
        proc.stdout.close()
        proc.stderr.close()
    if error:
        raise SourceError(error)
    if proc.returncode != 0:
        raise SourceError(f"git archive failed (exit {proc.returncode}): {git_cause(stderr)}")
