"""Liveness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gate.api.deps import GateDep
from gate.api.schemas import HealthOut
from gate.domain import routes

router = APIRouter(tags=["health"])


@router.get(routes.HEALTHZ, response_model=HealthOut,
            responses={503: {"model": HealthOut, "description": "the database does not answer"}})
def healthz(gate: GateDep) -> JSONResponse:
    """Whether the service and its database answer."""
    executor = type(gate.executor).__name__
    try:
        gate.store.ping()
    except Exception as exc:
        body = HealthOut(status="unavailable", database=f"error: {type(exc).__name__}", executor=executor)
        return JSONResponse(body.model_dump(), status_code=503)
    return JSONResponse(HealthOut(status="ok", database="ok", executor=executor).model_dump())


@router.get(routes.METRICS, response_class=Response)
def metrics(request: Request) -> Response:
    """Prometheus text: jobs by state, stage durations, verdicts."""
    return Response(generate_latest(request.app.state.metrics_registry), media_type=CONTENT_TYPE_LATEST)
