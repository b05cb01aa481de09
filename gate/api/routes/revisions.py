"""Submitting revisions and reading their verdicts."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from gate.api.context import GateContext, PlannerFull
from gate.api.deps import GateDep, UnitDep, WriteAuth
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
from gate.domain import routes
from gate.domain.codec import to_json
from gate.services.cancellation import cancel
from gate.services.submissions import PLANNER_FULL, Submission, fail_unplanned, is_local_repo, submit
from gate.sources.policy import FetchRefused
from gate.read_models.revision import RevisionDetail
from gate.storage.limits import storable_id

router = APIRouter(tags=["revisions"])
LOCAL_PLAN_WAIT_S = 10.0        # past it a local path's plan goes on after a 202, like a remote's

SUBMIT_DESCRIPTION = """Submit a revision: stored before the reply, one queued job per kernel.

**Idempotent.** While a revision with the same repository, commit, `base_sha` and set of
`kernels` is queued or running, an identical submission returns that revision: HTTP 200 with
`reused: true` and its `id`, and nothing new is stored. Submissions racing each other store one
revision. `sha` (and `base_sha`, when given) must be full commit shas (40 or 64 hex digits) to be
reused: a branch, tag or short sha may move between two submissions, so each of those is gated anew.
`"force": true` always stores a new revision. A finished or cancelled revision is never reused."""


@router.post(routes.REVISIONS, status_code=202, response_model=RevisionCreatedOut, dependencies=[WriteAuth],
             description=SUBMIT_DESCRIPTION,
             responses={**errors(400, 401, 413, 503),
                        200: {"model": RevisionCreatedOut,
                              "description": "an identical submission is queued or running: that revision, "
                                             "`reused: true`"},
                        422: {"model": RevisionRefusedOut,
                              "description": "invalid input, or the repository, sha or gate.toml is unusable"}})
async def create_revision(body: RevisionIn, request: Request, gate: GateDep) -> RevisionCreatedOut | JSONResponse:
    """Submit a revision: stored before the reply, one queued job per kernel (or the identical one).

    Planning runs on the planner's workers, never on a thread that serves HTTP; a local path's plan
    is awaited (briefly) so that its faults come back as a 422."""
    try:
        gate.policy.check_static(body.repo)     # refused now, not answered 202 and refused later
    except FetchRefused as exc:
        return _refused("repo", str(exc))
    fetch = await run_in_threadpool(gate.fetch_of, body.repo)
    if not gate.planner.has_room(fetch):
        raise PlannerFull()
    submitted = await run_in_threadpool(_submit, gate, body)
    revision_id = submitted.revision_id
    out = RevisionCreatedOut(id=revision_id, reused=submitted.reused,
                             status_url=str(request.url_for("read_revision", revision_id=revision_id)))
    if submitted.reused:
        return JSONResponse(out.model_dump(), status_code=200)
    planning = gate.plan_later(revision_id, fetch)
    if planning is None:
        await run_in_threadpool(fail_unplanned, gate.store, revision_id, PLANNER_FULL)
        raise PlannerFull()
    if not is_local_repo(body.repo):
        return out                          # fetching a remote may be slow: planned after the reply
    try:
        plan = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(planning)), LOCAL_PLAN_WAIT_S)
    except TimeoutError:
        return out
    if plan.error:
        return _refused(plan.field or "repo", plan.error, out)
    return out


def _submit(gate: GateContext, body: RevisionIn) -> Submission:
    with gate.store.unit() as uow:
        return submit(uow, repo=body.repo, sha=body.sha, branch=body.branch, base_sha=body.base_sha,
                      kernels=body.kernel_names(), source="api", force=body.force, remeasure=body.remeasure)


def _refused(field: str, message: str, created: RevisionCreatedOut | None = None) -> JSONResponse:
    detail = [{"loc": ["body", field], "msg": message, "type": "gate_plan_error"}]
    return JSONResponse({"detail": detail, **(created.model_dump() if created else {})}, status_code=422)


CANCEL_DESCRIPTION = """Cancel a revision: its queued jobs never start, its running jobs are stopped
(their GPU child's process group is killed: at once by the embedded executor, at the worker's next
heartbeat, within 5 s, by a Celery or `gate worker` process), and the revision ends `cancelled`,
a final status that never reads as `accept` (GitHub: an `error` commit status and a `cancelled`
Check Run). Idempotent: cancelling a cancelled revision answers 200 again, with no jobs."""


@router.post(routes.REVISION_CANCEL, response_model=CancelOut, dependencies=[WriteAuth],
             description=CANCEL_DESCRIPTION,
             responses={**errors(401, 404, 413),
                        409: {"model": ErrorOut, "description": "the revision is done: its verdicts stand"}})
def cancel_revision(revision_id: int, request: Request, uow: UnitDep, gate: GateDep) -> CancelOut:
    """Cancel a queued or running revision."""
    result = cancel(uow, revision_id, gate.executor, gate.notifier) if storable_id(revision_id) else None
    if result is None or result.status is None:
        raise HTTPException(status_code=404, detail=f"no revision {revision_id}")
    if result.finished:
        raise HTTPException(status_code=409, detail=f"revision {revision_id} is done: its verdicts stand")
    return CancelOut(id=revision_id, status=result.status, cancelled_jobs=result.job_ids,
                     status_url=str(request.url_for("read_revision", revision_id=revision_id)))


@router.get(routes.REVISION, response_model=RevisionOut, responses=errors(404))
def read_revision(revision_id: int, request: Request, uow: UnitDep) -> RevisionOut:
    """A revision: status, verdict per kernel, rule tables, stage results, artifacts, live progress."""
    detail = uow.revisions.detail(revision_id)
    if detail is None:
        raise HTTPException(status_code=404, detail=f"no revision {revision_id}")
    return revision_out(detail, request)


def revision_out(detail: RevisionDetail, request: Request) -> RevisionOut:
    data = to_json(detail)       # typed results back to the JSON they were stored as
    for job in data["jobs"]:
        job["artifacts"] = [
            ArtifactOut(**a, url=str(request.url_for("download_artifact", artifact_id=a["id"])))
            for a in job["artifacts"]
        ]
        for stage in job["stages"]:
            stage["payload"] = stage.pop("result")
    data["jobs"] = [JobOut(**job) for job in data["jobs"]]
    return RevisionOut(**data)
