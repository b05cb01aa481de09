"""Submitting revisions and reading their verdicts."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, BackgroundTasks, HTTPException, Request
from fastapi.responses import JSONResponse

from gate.api.deps import GateDep, SessionDep, WriteAuth
from gate.api.schemas import (
    ArtifactOut,
    CancelOut,
    ErrorOut,
    JobOut,
    RevisionCreatedOut,
    RevisionIn,
    RevisionOut,
    RevisionRefusedOut,
    errors,
)
from gate.services.cancellation import cancel
from gate.services.submissions import is_local_repo, plan_revision, submit
from gate.read_models.revision import RevisionDetail
from gate.storage.limits import storable_id
from gate.storage.queries import revision_detail

router = APIRouter(prefix="/api/v1", tags=["revisions"])


SUBMIT_DESCRIPTION = """Submit a revision: stored before the reply, one queued job per kernel.

**Idempotent.** While a revision with the same repository, commit, `base_sha` and set of
`kernels` is queued or running, an identical submission returns that revision: HTTP 200 with
`reused: true` and its `id`, and nothing new is stored. Submissions racing each other store one
revision. `sha` (and `base_sha`, when given) must be full commit shas (40 or 64 hex digits) to be
reused: a branch, tag or short sha may move between two submissions, so each of those is gated anew.
`"force": true` always stores a new revision. A finished or cancelled revision is never reused."""


@router.post("/revisions", status_code=202, response_model=RevisionCreatedOut, dependencies=[WriteAuth],
             description=SUBMIT_DESCRIPTION,
             responses={**errors(400, 401, 413),
                        200: {"model": RevisionCreatedOut,
                              "description": "an identical submission is queued or running: that revision, "
                                             "`reused: true`"},
                        422: {"model": RevisionRefusedOut,
                              "description": "invalid input, or the repository, sha or gate.toml is unusable"}})
def create_revision(body: RevisionIn, request: Request, session: SessionDep, gate: GateDep,
                    background: BackgroundTasks) -> RevisionCreatedOut | JSONResponse:
    """Submit a revision: stored before the reply, one queued job per kernel (or the identical one)."""
    submitted = submit(session, repo=body.repo, sha=body.sha, branch=body.branch, base_sha=body.base_sha,
                       kernels=body.kernel_names(), source="api", force=body.force,
                       remeasure=body.remeasure)
    revision = submitted.revision
    out = RevisionCreatedOut(id=revision.id, reused=submitted.reused,
                             status_url=str(request.url_for("read_revision", revision_id=revision.id)))
    if submitted.reused:
        return JSONResponse(out.model_dump(), status_code=200)
    if not is_local_repo(body.repo):
        background.add_task(gate.plan_later, revision.id)   # fetching a remote may be slow
        return out
    plan = plan_revision(session, revision, sources=gate.sources)   # a local path is cheap to check now
    if plan.error:
        detail = [{"loc": ["body", plan.field or "repo"], "msg": plan.error, "type": "gate_plan_error"}]
        return JSONResponse({"detail": detail, **out.model_dump()}, status_code=422)
    gate.executor.wake()
    return out


CANCEL_DESCRIPTION = """Cancel a revision: its queued jobs never start, its running jobs are stopped
(their GPU child's process group is killed: at once by the embedded executor, at the worker's next
heartbeat, within 5 s, by a Celery or `gate worker` process), and the revision ends `cancelled`,
a final status that never reads as `accept` (GitHub: an `error` commit status and a `cancelled`
Check Run). Idempotent: cancelling a cancelled revision answers 200 again, with no jobs."""


@router.post("/revisions/{revision_id}/cancel", response_model=CancelOut, dependencies=[WriteAuth],
             description=CANCEL_DESCRIPTION,
             responses={**errors(401, 404, 413),
                        409: {"model": ErrorOut, "description": "the revision is done: its verdicts stand"}})
def cancel_revision(revision_id: int, request: Request, session: SessionDep, gate: GateDep) -> CancelOut:
    """Cancel a queued or running revision."""
    result = cancel(session, revision_id, gate.executor) if storable_id(revision_id) else None
    if result is None or result.status is None:
        raise HTTPException(status_code=404, detail=f"no revision {revision_id}")
    if result.finished:
        raise HTTPException(status_code=409, detail=f"revision {revision_id} is done: its verdicts stand")
    return CancelOut(id=revision_id, status=result.status, cancelled_jobs=result.job_ids,
                     status_url=str(request.url_for("read_revision", revision_id=revision_id)))


@router.get("/revisions/{revision_id}", response_model=RevisionOut, responses=errors(404))
def read_revision(revision_id: int, request: Request, session: SessionDep) -> RevisionOut:
    """A revision: status, verdict per kernel, rule tables, stage results, artifacts, live progress."""
    detail = revision_detail(session, revision_id)
    if detail is None:
        raise HTTPException(status_code=404, detail=f"no revision {revision_id}")
    return revision_out(detail, request)


def revision_out(detail: RevisionDetail, request: Request) -> RevisionOut:
    data = asdict(detail)
    for job in data["jobs"]:
        job["artifacts"] = [
            ArtifactOut(**a, url=str(request.url_for("download_artifact", artifact_id=a["id"])))
            for a in job["artifacts"]
        ]
    data["jobs"] = [JobOut(**job) for job in data["jobs"]]
    return RevisionOut(**data)
