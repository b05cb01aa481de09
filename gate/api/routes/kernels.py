"""Kernels and their metric history as JSON (the same reads as the dashboards)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, Response
from pydantic import BaseModel

from gate.api.deps import SeriesCacheDep, UnitDep
from gate.api.schemas import (
    GpuKind,
    KernelName,
    KernelOut,
    LatestVerdictOut,
    MetricName,
    PointOut,
    SeriesName,
    ShapeName,
    errors,
)
from gate.domain import routes
from gate.domain.names import Side
from gate.figures.kernel_page import PER_ARCH_METRICS   # ptxas and SASS figures: series = arch, shape ""
from gate.figures.like_with_like import CYCLE_TWIN, change_points
from gate.read_models.kernel_series import HistoryPoint, KernelHistory, SeriesHistory, history_points
from gate.storage.kernel_series import MAX_POINTS
from gate.storage.series_cache import SeriesCache
from gate.storage.unit import UnitOfWork

router = APIRouter(tags=["kernels"])
MAX_SERIES = 64              # traces one history request may name


class ChangePointOut(BaseModel):
    x: int
    revision_id: int
    before: float
    after: float
    shift_pct: float
    basis: str = ""          # "kcycles": found in SM kilocycles (the environment's clocks differed)


class SeriesOut(BaseModel):
    shape: str
    series: str
    unit: str
    points: list[PointOut]
    environments: list[str]  # per point: GPU model | driver | clock policy ("" = unknown)
    change_points: list[ChangePointOut]
    # Revisions off the default branch (pull requests' heads, other branches): not in `points` nor
    # in the change points; each x is the line place it is drawn beside.
    off_branch: list[PointOut] = []


class HistoryOut(BaseModel):
    kernel: str
    metric: str
    gpu_kind: str
    revisions: int
    bucket_revisions: int
    series: list[SeriesOut]


@router.get(routes.KERNELS, response_model=list[KernelOut])
def list_kernels(uow: UnitDep) -> list[KernelOut]:
    """Every kernel with its latest verdict per GPU kind."""
    return [KernelOut(name=k.name, revisions=k.revisions,
                      latest=[LatestVerdictOut(**v.__dict__) for v in k.latest])
            for k in uow.overview.kernel_overview()]


@router.get(routes.KERNEL_HISTORY, response_model=HistoryOut, responses=errors(404))
def kernel_history(request: Request, uow: UnitDep, cache: SeriesCacheDep, name: KernelName, metric: MetricName,
                   gpu: Annotated[GpuKind | None, Query()] = None,
                   shape: Annotated[ShapeName | None, Query()] = None,
                   series: Annotated[list[SeriesName] | None, Query(max_length=MAX_SERIES)] = None,
                   max_points: Annotated[int, Query(ge=10, le=MAX_POINTS)] = 1000,
                   ) -> Response:
    """One metric's history (candidate by default; `series` adds peers or archs), with change points."""
    # Bucketing, change points and serialising three traces of 100,000 revisions cost more than the
    # 200 ms budget; the answer changes only when a verdict (with its metrics) is stored, which the
    # version sees, so the JSON is kept per version.
    key = ("history API", name, metric, gpu, shape, tuple(series or ()), max_points, uow.history.data_version(name))
    body = request.app.state.page_cache.get_or_build(key, lambda: history_out(
        uow, cache, name, metric, gpu, shape, series, max_points).model_dump_json().encode())
    return Response(body, media_type="application/json")


def history_out(uow: UnitOfWork, cache: SeriesCache, name: str, metric: str, gpu: str | None, shape: str | None,
                series: list[str] | None, max_points: int) -> HistoryOut:
    """What `GET /api/v1/kernels/{name}/history` answers (the route keeps it per data version)."""
    gpus = uow.history.gpu_kinds(name)
    if not gpus:
        raise HTTPException(404, f"no verdicts for kernel {name!r}")
    if gpu is not None and gpu not in gpus:
        raise HTTPException(404, f"kernel {name!r} has no verdicts on {gpu!r}")
    gpu = gpu or gpus[0]
    wanted_series = series or (uow.history.archs(name, gpu) if metric in PER_ARCH_METRICS else [Side.CANDIDATE.value])
    shapes = [shape] if shape is not None else (
        [""] if metric in PER_ARCH_METRICS else uow.history.shapes(name, gpu))
    traces = [(metric, sh, s) for sh in shapes for s in wanted_series]
    twins = [(CYCLE_TWIN[metric], sh, s) for _, sh, s in traces] if metric in CYCLE_TWIN else []
    hist = uow.history.history(name, gpu, traces + twins, max_points=max_points, cache=cache)
    apart = {(s.shape, s.series): s for s in hist.off_branch if s.name == metric}
    out = [_series_out(hist, s, apart.pop((s.shape, s.series), None)) for s in hist.series if s.name == metric]
    # (a kilocycle twin is read by change_points only)
    out += [SeriesOut(shape=s.shape, series=s.series, unit=s.unit, points=[], environments=[],
                      change_points=[], off_branch=_off_branch(s, hist)) for s in apart.values()]
    return HistoryOut(kernel=name, metric=metric, gpu_kind=gpu, revisions=hist.revisions,
                      bucket_revisions=hist.bucket_revisions, series=out)


def _series_out(hist: KernelHistory, s: SeriesHistory, apart: SeriesHistory | None) -> SeriesOut:
    cps = change_points(hist, s)
    points = history_points(s, hist.details)
    return SeriesOut(
        shape=s.shape, series=s.series, unit=s.unit,
        points=[_point(p) for p in points],
        off_branch=_off_branch(apart, hist),
        environments=s.environments or [""] * len(points),
        change_points=[ChangePointOut(x=points[c.index].x, revision_id=points[c.index].revision_id,
                                      before=c.before, after=c.after, shift_pct=c.shift_pct, basis=c.basis)
                       for c in cps])


def _point(p: HistoryPoint) -> PointOut:
    return PointOut(**{k: getattr(p, k) for k in PointOut.model_fields})


def _off_branch(s: SeriesHistory | None, hist: KernelHistory) -> list[PointOut]:
    return [] if s is None else [_point(p) for p in history_points(s, hist.details)]
