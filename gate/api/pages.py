"""The dashboards: server-rendered pages (Jinja templates in `dashboards/`) with plotly charts.

plotly.js is served from the installed `plotly` package, so the pages work without internet.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import replace
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup
from sqlalchemy.orm import Session

from gate.api.deps import SeriesCacheDep, SessionDep
from gate.domain.names import Direction, Metric, Side, Stage
from gate.domain.verdict import Verdict
from gate.pipeline.symbols import kernel_name
from gate.figures.kernel_page import PEER_METRIC, kernel_charts, wanted_traces
from gate.figures.palette import VERDICT_COLOR
from gate.figures.revision import compare_figure, ncu_figure, sass_figure, timing_figure
from gate.figures.revision_table import revision_table
from gate.storage import dashboard, kernel_series
from gate.storage.series_cache import SeriesCache
from gate.storage.queries import revision_detail

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
PLOTLY_JS = importlib.resources.files("plotly") / "package_data" / "plotly.min.js"
PAGE_POINTS = 400      # per trace (a chart is ~550 px wide); beyond it revisions are bucketed

templates = Jinja2Templates(directory=DASHBOARDS / "templates")
templates.env.globals["verdict_color"] = VERDICT_COLOR
# `tojson` escapes <, > and & (safe inside <script>); compact and unsorted keeps big charts cheap.
templates.env.policies["json.dumps_kwargs"] = {"separators": (",", ":")}
router = APIRouter(include_in_schema=False)
static_files = StaticFiles(directory=DASHBOARDS / "static")


@router.get("/static/plotly.min.js")
def plotly_js() -> FileResponse:
    with importlib.resources.as_file(PLOTLY_JS) as path:
        return FileResponse(path, media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=86400"})


def _render(request: Request, session: Session, name: str, **context: object) -> HTMLResponse:
    return templates.TemplateResponse(request, name,
                                      {"synthetic": dashboard.has_synthetic_revisions(session), **context})


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, session: SessionDep) -> HTMLResponse:
    """Every kernel's latest verdict per GPU kind, the queue, recent revisions."""
    return _render(request, session, "index.html", kernels=dashboard.kernel_overview(session),
                   queue=dashboard.queue(session), revisions=dashboard.recent_revisions(session))


@router.get("/kernels/{name}", response_class=HTMLResponse)
def kernel_page(request: Request, session: SessionDep, store: SeriesCacheDep, name: str,
                gpu: Annotated[str | None, Query()] = None,
                shape: Annotated[str | None, Query()] = None) -> HTMLResponse:
    """A kernel's history per metric group on one GPU kind, optionally one shape."""
    # Reading and bucketing 10,000 revisions costs more than the page's 200 ms budget; the result
    # changes only when a verdict (with its metrics) is stored, which the version sees.
    key = ("kernel", name, gpu, shape, kernel_series.data_version(session, name))
    view = request.app.state.page_cache.get_or_build(
        key, lambda: _kernel_view(session, store, name, gpu, shape))
    return _render(request, session, "kernel.html", **view)


def _kernel_view(session: Session, store: SeriesCache, name: str, gpu: str | None,
                 shape: str | None) -> dict:
    """The kernel template's context, each chart's figure already serialized to page-safe JSON."""
    gpus = kernel_series.kernel_gpu_kinds(session, name)
    if not gpus:
        raise HTTPException(404, f"no verdicts for kernel {name!r}")
    gpu = gpu if gpu in gpus else gpus[0]
    shapes = kernel_series.kernel_shapes(session, name, gpu)
    chosen = [shape] if shape in shapes else shapes
    hist = kernel_series.kernel_history(session, name, gpu,
                                  wanted_traces(chosen, kernel_series.kernel_archs(session, name, gpu)),
                                  max_points=PAGE_POINTS, store=store)
    peers = {key: kernel_series.peer_levels(session, name, gpu, metric, chosen)
             for key, metric in PEER_METRIC.items()}
    charts = kernel_charts(hist, kernel_series.latest_rules(session, name, gpu), peers)
    return {"kernel": name, "gpu": gpu, "gpus": gpus, "shape": shape if shape in shapes else "",
            "shapes": shapes, "history": hist,
            "revisions": figure_json(revision_table(hist.details)),
            "charts": [replace(c, figure=figure_json(c.figure)) for c in charts]}


def figure_json(figure: dict | list) -> Markup:
    """A figure as the `tojson` filter writes it (<, >, & escaped: safe inside <script>)."""
    return Markup(htmlsafe_json_dumps(figure, **templates.env.policies["json.dumps_kwargs"]))


@router.get("/revisions/{revision_id}", response_class=HTMLResponse)
def revision_page(request: Request, session: SessionDep, revision_id: int) -> HTMLResponse:
    """Rule tables first, then timings, correctness, ncu, ptxas/SASS, logs and artifacts."""
    detail = revision_detail(session, revision_id)
    if detail is None:
        raise HTTPException(404, f"no revision {revision_id}")
    return _render(request, session, "revision.html", rev=detail,
                   jobs=[_job_view(job) for job in sorted(detail.jobs, key=_worst_first)],
                   running=detail.status in ("queued", "running"))   # done or cancelled: final


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, session: SessionDep, a: int, b: int) -> HTMLResponse:
    """Two revisions side by side: verdicts and every shared metric with its delta."""
    left, right = revision_detail(session, a), revision_detail(session, b)
    if left is None or right is None:
        raise HTTPException(404, f"no revision {a if left is None else b}")
    rows = _compare_rows(session, a, b)
    lat = [r for r in rows if r["name"] == Metric.LATENCY_MEDIAN_US and r["series"] == Side.CANDIDATE]
    chart = compare_figure([f"{r['kernel']} · {r['shape']}" for r in lat], [r["a"] for r in lat],
                            [r["b"] for r in lat], left.sha[:8], right.sha[:8]) if lat else None
    return _render(request, session, "compare.html", a=left, b=right, rows=rows, chart=chart)


def _compare_rows(session: Session, a: int, b: int) -> list[dict]:
    values: dict[tuple, dict] = {}
    for m in dashboard.compared_metrics(session, a, b):
        row = values.setdefault((m.kernel, m.gpu_kind, m.name, m.shape, m.series), {
            "kernel": m.kernel, "gpu": m.gpu_kind, "name": m.name, "shape": m.shape, "series": m.series,
            "unit": m.unit, "direction": m.direction, "a": None, "b": None})
        row["a" if m.revision_id == a else "b"] = m.value
    for row in values.values():
        va, vb = row["a"], row["b"]
        row["delta_pct"] = (100.0 * (vb - va) / abs(va)) if va and vb is not None else None
        better = row["delta_pct"] is not None and abs(row["delta_pct"]) >= 1.0 and (
            (row["delta_pct"] < 0) == (row["direction"] == Direction.LOWER))
        row["tone"] = "" if row["delta_pct"] is None or abs(row["delta_pct"]) < 1.0 else (
            "good" if better else "bad")
    return list(values.values())


VERDICTS = frozenset(v.value for v in Verdict)


def _worst_first(job) -> int:  # noqa: ANN001 (a JobDetail)
    """Jobs whose verdict decided the revision first (reject before accept)."""
    v = job.verdict.verdict if job.verdict else ""
    return Verdict(v).severity if v in VERDICTS else len(VERDICTS)


def _job_view(job) -> dict:  # noqa: ANN001 (a JobDetail)
    """What the revision template needs of one job, figures built."""
    stages = {(s.side, s.stage): s for s in job.stages}
    bench = stages.get((Side.JOINT, Stage.BENCH))
    static = stages.get((Side.CANDIDATE, Stage.STATIC))
    prof_c, prof_b = stages.get((Side.CANDIDATE, Stage.PROFILE)), stages.get((Side.BASELINE, Stage.PROFILE))
    payload = lambda s: (s.payload or {}) if s else {}   # noqa: E731
    timings = [timing_figure(t) for t in payload(bench).get("shapes", [])]
    ncu_c, ncu_b = payload(prof_c).get("kernels", []), payload(prof_b).get("kernels", [])
    functions = [{**f, "name": kernel_name(f.get("function", ""))} for f in payload(static).get("functions", [])]
    return {
        "job": job, "stages": job.stages, "timings": timings,
        "ncu": ncu_figure(ncu_c, ncu_b) if ncu_c or ncu_b else None,
        "ncu_rows": ncu_c, "ncu_base": {k.get("shape"): k for k in ncu_b},
        "functions": functions,
        "sass": sass_figure(functions) if any(f.get("sass_opcodes") for f in functions) else None,
        "cases": payload(stages.get((Side.CANDIDATE, Stage.CORRECTNESS))).get("cases", []),
        "build_log": payload(stages.get((Side.CANDIDATE, Stage.BUILD))).get("log", ""),
        "ptxas_log": payload(static).get("log", ""),
        "report": next((a for a in job.artifacts if a.kind in ("ncu_report", "ncu-rep")
                        or a.path.endswith(".ncu-rep")), None),
    }
