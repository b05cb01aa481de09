"""Submitting a revision (stored and committed before any reply) and planning its jobs.

`submit` stores a queued revision without jobs, or returns the identical one still queued or running;
`plan_revision` resolves the sha, reads gate.toml there, places the commit in the history, chooses the
baseline and queues one job per kernel (a bad repo, sha or manifest ends the revision with `error`);
`plan_by_id` and, at start-up, `plan_pending` run it in units of their own, so nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from gate.domain.verdict import Verdict
from gate.errors import GateError, ManifestError, SourceError, StorageError
from gate.notify import Notifier
from gate.services.announce import announce
from gate.services.sources import SourceReader, as_naive_utc
from gate.sources.policy import FetchRefused, url_kind
from gate.storage.planning import RevisionToPlan
from gate.storage.unit import Store, UnitOfWork

log = logging.getLogger(__name__)


def is_local_repo(repo: str) -> bool:
    """A path on this machine, read as git reads it (`gate.sources.policy.url_kind`: `host:path` is
    ssh); a URL, `file://` included, is not, and a malformed one counts as remote (the fetch policy
    refuses it by name)."""
    if "://" in repo:
        return False
    try:
        return url_kind(repo)[0] == "local"
    except FetchRefused:
        return False


def canonical_repo(repo: str) -> tuple[str, str]:
    """(url, name): local paths made absolute; `https://host/owner/name.git` named `owner/name`.
    `SourceError` for a `~user` path of an unknown user."""
    if is_local_repo(repo):
        try:
            path = Path(repo).expanduser().resolve()
        except RuntimeError as exc:   # `~user/...` of a user this machine does not know
            raise SourceError(f"{repo}: {exc}") from exc
        return str(path), path.name
    url = repo.rstrip("/")
    tail = re.split(r"[/:]", url.removesuffix(".git"))
    return url, "/".join(tail[-2:])


_COMMIT_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")     # SHA-1 or SHA-256 object name


def submission_key(sha: str, base_sha: str | None, kernels: list[str] | None) -> str | None:
    """What makes two submissions of one repository identical: the commit, the baseline asked for
    and the set of kernels. None (never reused) when `sha` or `base_sha` is a ref or a short sha:
    a branch may move between two submissions, and the second must then gate the new commit."""
    if not _COMMIT_ID.fullmatch(sha) or (base_sha is not None and not _COMMIT_ID.fullmatch(base_sha)):
        return None
    what = [sha.lower(), base_sha.lower() if base_sha else None, sorted(set(kernels)) if kernels else None]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()


@dataclass(frozen=True)
class Submission:
    revision_id: int
    reused: bool        # an identical submission was queued or running: it is returned, nothing stored


def submit(uow: UnitOfWork, *, repo: str, sha: str, branch: str | None = None, base_sha: str | None = None,
           kernels: list[str] | None = None, source: str = "api", pull_request: int | None = None,
           force: bool = False, remeasure: bool = False) -> Submission:
    """Store a revision and commit; only then may the caller reply. Its jobs come from `plan_revision`.

    Idempotent: while a revision with the same repository, commit, baseline and kernels is queued or
    running, that revision is returned (`reused`) instead of a second one; `force` always stores a
    new one (which later submissions do not reuse), and so does `remeasure` (its jobs take no earlier
    job's figures: docs/reuse.md; a webhook never asks for it). Racing submissions store one revision (the
    database's unique index decides, `storage.planning.Planning.store_submission`)."""
    url, name = canonical_repo(repo)
    key = None if force or remeasure else submission_key(sha, base_sha, kernels)
    revision_id, reused = uow.planning.store_submission(
        url=url, name=name, submission_key=key, sha=sha, branch=branch, base_sha=base_sha, kernels=kernels or None,
        source=source, pull_request=pull_request, remeasure=remeasure)
    if reused:
        log.info("revision %s reused for an identical submission of %s", revision_id, sha[:12])
    return Submission(revision_id=revision_id, reused=reused)


def submit_revision(uow: UnitOfWork, **submission: object) -> int:
    """`submit` for callers that need only the revision's id (a reused one or a new one)."""
    return submit(uow, **submission).revision_id


@dataclass
class PlanResult:
    job_ids: list[int] = field(default_factory=list)
    error: str | None = None         # why the revision could not be planned (names the sha, key or path)
    field: str | None = None         # the submitted field at fault: repo | sha | base_sha | kernels


def _fail(uow: UnitOfWork, revision_id: int, field_name: str, message: str) -> PlanResult:
    if uow.planning.end_unplanned(revision_id, message):       # else cancelled meanwhile: it stays cancelled
        log.info("revision %s not planned: %s", revision_id, message)
    return PlanResult(error=message, field=field_name)


def plan_revision(uow: UnitOfWork, revision_id: int, *, sources: SourceReader,
                  notifier: Notifier | None = None) -> PlanResult:
    """One queued job per kernel of gate.toml at the revision, or the revision ends with `error`.
    Once the jobs are committed, `notifier` hears of them (e.g. `pending` commit statuses)."""
    todo = uow.planning.to_plan(revision_id)
    if todo is None:
        return PlanResult(error=f"no revision {revision_id}")
    if not todo.plannable:
        return PlanResult(job_ids=todo.job_ids, error=todo.error)
    uow.commit()        # git may take minutes (or hang until its timeout): hold no connection
    repo, wanted_sha, wanted_base = todo.repo_url, todo.sha, todo.base_sha
    try:
        sha = sources.resolve(repo, wanted_sha)
    except FetchRefused as exc:
        return _fail(uow, revision_id, "repo", f"{repo[:200]}: {exc}")
    except SourceError as exc:
        field_name = "repo" if is_local_repo(repo) and not Path(repo).is_dir() else "sha"
        return _fail(uow, revision_id, field_name, f"cannot resolve sha {wanted_sha!r} in {repo}: {exc}")
    try:
        info = sources.commit_info(repo, sha)
        manifest = sources.manifest(repo, sha)
        base = wanted_base and sources.resolve(repo, wanted_base)
    except ManifestError as exc:
        return _fail(uow, revision_id, "repo", f"gate.toml at {sha[:12]}: {exc}")
    except SourceError as exc:
        return _fail(uow, revision_id, "base_sha", f"cannot resolve base_sha {wanted_base!r}: {exc}")
    except StorageError:
        raise
    except GateError as exc:
        return _fail(uow, revision_id, "repo", f"cannot read {repo} at {sha[:12]}: {exc}")
    # Planned elsewhere, or cancelled, meanwhile? The row stays locked until the jobs are committed.
    still_queued = uow.planning.lock_queued(revision_id)
    todo = uow.planning.to_plan(revision_id)
    if not still_queued or todo.job_ids:
        uow.rollback()
        return PlanResult(job_ids=todo.job_ids, error=todo.error)
    names = [k.name for k in manifest.kernels]
    unknown = [k for k in (todo.kernels or []) if k not in names]
    if unknown:
        return _fail(uow, revision_id, "kernels",
                     f"kernels {unknown} are not in gate.toml at {sha[:12]} (it declares {names})")
    position, on_branch = _place(sources, todo, sha)
    uow.planning.record_commit(revision_id, sha=sha, base_sha=base or None, parent_sha=info.get("parent_sha"),
                               author=info.get("author"), message=info.get("message"),
                               committed_at=as_naive_utc(info.get("committed_at")),
                               position=position, on_branch=on_branch)
    baseline = choose_baseline(uow, revision_id, base_sha=base or None, parent_sha=info.get("parent_sha"))
    wanted = [name for name in names if not todo.kernels or name in todo.kernels]
    job_ids, notice = uow.planning.queue_jobs(revision_id, wanted, baseline)
    announce(uow, notifier or Notifier(), notice)
    return PlanResult(job_ids=job_ids)


def _place(sources: SourceReader, todo: RevisionToPlan, sha: str) -> tuple[int | None, bool | None]:
    """Where the kernel histories draw the commit: (first-parent depth, on the drawn branch); a pull
    request's head or another branch's commit is apart whatever git says. Unknown (None, None: the
    history falls back to commit time, logged) when git cannot say: a drawing aid never fails a plan."""
    try:
        position, on_branch = sources.commit_place(todo.repo_url, sha, todo.drawn_branch)
    except SourceError as exc:
        log.warning("revision %s: place of %s in the history unknown: %s", todo.id, sha[:12], exc)
        return None, None
    return position, on_branch and not todo.elsewhere


def choose_baseline(uow: UnitOfWork, revision_id: int, *, base_sha: str | None,
                    parent_sha: str | None) -> str | None:
    """`base_sha` when given; else the newest earlier revision of the repository's default branch whose
    every job ended `accept`; else the parent. None only for a root commit with no accepted history:
    the job then runs without a baseline."""
    if base_sha:
        return base_sha
    for rev in uow.planning.default_branch_before(revision_id):
        if rev.verdicts and all(v == Verdict.ACCEPT for v in rev.verdicts):
            return rev.sha
    return parent_sha


def plan_by_id(store: Store, revision_id: int, *, sources: SourceReader,
               notifier: Notifier | None = None) -> PlanResult:
    """`plan_revision` in its own unit (on the planner's workers, after a fast reply). Anything
    it raises but a database fault ends the revision `error`: a revision that cannot be planned now
    cannot be planned at the next start either (issue 24: one left queued was planned, and failed,
    again at every start, so the server never started). A database fault leaves it queued for the
    next start."""
    try:
        with store.unit() as uow:
            return plan_revision(uow, revision_id, sources=sources, notifier=notifier)
    except StorageError:
        raise
    except Exception as exc:    # noqa: BLE001 - the revision must end, whatever the input did
        log.exception("planning revision %s raised", revision_id)
        reason = f"planning failed ({type(exc).__name__}); the server's log has the details"
        return fail_unplanned(store, revision_id, reason)


PLANNER_FULL = "not planned: the planning queue is full (GATE_PLANNER_QUEUE); submit again later"


def fail_unplanned(store: Store, revision_id: int, reason: str) -> PlanResult:
    """End a queued revision without jobs as `error` with `reason` (it is never planned again)."""
    with store.unit() as uow:
        todo = uow.planning.to_plan(revision_id)
        if todo is None or todo.job_ids:
            return PlanResult(error=reason)
        return _fail(uow, revision_id, "repo", reason)


def plan_pending(store: Store, *, sources: SourceReader, notifier: Notifier | None = None) -> list[int]:
    """Plan every revision left queued without jobs (the server stopped before planning it), each
    on its own: one that fails is logged and ends `error`, the others are still planned."""
    with store.unit() as uow:
        ids = uow.planning.unplanned_ids()
    for revision_id in ids:
        try:
            plan_by_id(store, revision_id, sources=sources, notifier=notifier)
        except StorageError:
            log.exception("revision %s not planned: the database failed; planned at the next start", revision_id)
    return list(ids)
