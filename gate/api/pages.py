"""The dashboards: server-rendered pages (Jinja templates in `dashboards/`) with plotly charts.

plotly.js is served from the installed `plotly` package, so the pages work without internet.
"""

from __future__ import annotations

import importlib.resources
from typing import Annotated

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import StrictUndefined
from starlette.exceptions import HTTPException as StarletteHTTPException

from gate.api.deps import SeriesCacheDep, UnitDep
from gate.api.page_views import (
    JSON_SEPARATORS,
    CompareView,
    KernelView,
    banners,
    compare_view,
    kernel_view,
    revision_view,
)
from gate.api.revision_refs import RefProblem, resolve
from gate.api.schemas import GpuKind, KernelName, ShapeName
from gate.domain import routes
from gate.domain.rule_words import threshold_words
from gate.domain.wording import format_value, gpu_words, joined, on_gpu_words, plural, progress_line, reason_beside
from gate.figures.kernel_page import PEER_METRIC, wanted_traces
from gate.figures.palette import VERDICT_COLOR
from gate.nvidia.symbols import kernel_name
from gate.storage.series_cache import SeriesCache
from gate.storage.unit import UnitOfWork

# The templates and static files are the `dashboards` package's data, installed with the wheel.
DASHBOARDS = importlib.resources.files("dashboards")
PLOTLY_JS = importlib.resources.files("plotly") / "package_data" / "plotly.min.js"
PAGE_POINTS = 400      # per trace (a chart is ~550 px wide); beyond it revisions are bucketed
PAGE_PREFIXES = tuple(routes.prefix(p) for p in (routes.KERNEL_PAGE, routes.REVISION_PAGE, routes.COMPARE_PAGE))
JSON_PREFIXES = (routes.API + "/", routes.HEALTHZ, routes.METRICS, routes.OPENAPI, routes.STATIC, routes.DOCS)
ERROR_TITLES = {404: "Not found", 400: "Bad request", 422: "Bad request"}


def gpu_short(kind: str | None) -> str:
    """A GPU kind in a few letters for a crowded cell: "NVIDIA H100 80GB HBM3" -> "H100"; the
    full name stays in the cell's title."""
    words = gpu_words(kind)
    if not words.startswith("NVIDIA "):
        return words
    return words.removeprefix("NVIDIA ").split(" ")[0].split("-")[0]


templates = Jinja2Templates(directory=str(DASHBOARDS / "templates"))
# A name a template reads that its context or a read model does not have (a renamed field) is an
# error, not an empty cell.
templates.env.undefined = StrictUndefined
# `tojson` writes what `page_views.figure_json` writes: compact, and safe inside <script>.
templates.env.policies["json.dumps_kwargs"] = {"separators": JSON_SEPARATORS}
# Every link a page draws is made of the routes' own paths (`gate.domain.routes`). The words of every
# page are `gate.domain.wording`'s: "no GPU (CPU only ...)" for `cpu`, "45.2 ms" for 45,230 us, a
# reason without its outcome repeated in front, "1 revision"; `kernel_name` writes a mangled entry
# name as its source spells it.
templates.env.globals.update(verdict_color=VERDICT_COLOR, routes=routes, link=routes.link, gpu_words=gpu_words,
                             on_gpu_words=on_gpu_words, joined=joined, progress_line=progress_line)
templates.env.filters.update(threshold=threshold_words, plural=plural, kernel_name=kernel_name, gpu_short=gpu_short,
                             beside=lambda reason, outcome: reason_beside(outcome, reason),
                             value=lambda value, unit="", digits=4: format_value(value, unit, digits))
router = APIRouter(include_in_schema=False)
static_files = StaticFiles(directory=str(DASHBOARDS / "static"))


@router.get(routes.PLOTLY_JS)
def plotly_js() -> FileResponse:
    with importlib.resources.as_file(PLOTLY_JS) as path:
        return FileResponse(path, media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=86400"})


def _render(request: Request, uow: UnitOfWork, name: str, view: object = None, status_code: int = 200,
            **context: object) -> HTMLResponse:
    """The template `name` with the banners, the fields of `view` (a page view model) and `context`."""
    overview = uow.overview
    top = banners(*overview.unmeasured_verdicts(), synthetic=overview.has_synthetic_revisions())
    return templates.TemplateResponse(request, name, {**vars(top), **(vars(view) if view else {}), **context},
                                      status_code=status_code)


def error_page(request: Request, status_code: int, message: str) -> HTMLResponse:
    """The HTML page of an error on a page route."""
    with request.app.state.gate.store.unit() as uow:
        return _render(request, uow, "error.html", status_code=status_code, status=status_code,
                       title=ERROR_TITLES.get(status_code, "Error"), message=message)


def wants_html(request: Request) -> bool:
    """Page routes always answer HTML; another path does when a browser asks for HTML."""
    path = request.url.path
    if path.startswith(JSON_PREFIXES):
        return False
    if path == routes.HOME or path.startswith(PAGE_PREFIXES):
        return True
    # Every Accept field: a request may send several (RFC 9110 5.3), and the first may not be the HTML one.
    return any("text/html" in accept for accept in request.headers.getlist("accept"))


def install_error_pages(app: FastAPI) -> None:
    """Errors as a person meets them: a page route (or a browser asking for an unknown path) gets an
    HTML page that says what was not found and links back; the JSON API keeps FastAPI's JSON errors
    (`{"detail": ...}`), which scripts and `gate submit` read. A 422 is `validation_errors`' alone."""

    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        if wants_html(request) and exc.status_code >= 400:
            return error_page(request, exc.status_code, str(exc.detail))
        return await http_exception_handler(request, exc)

    app.add_exception_handler(StarletteHTTPException, on_http)


@router.get(routes.HOME, response_class=HTMLResponse)
def overview(request: Request, uow: UnitDep) -> HTMLResponse:
    """Every kernel's latest verdict per GPU kind, the queue, recent revisions."""
    # Every kernel's latest verdicts and revision count group all verdicts; they change only when a
    # verdict is stored, which the version sees.
    key = ("overview", uow.overview.verdicts_version())
    kernels = request.app.state.page_cache.get_or_build(key, uow.overview.kernel_overview)
    return _render(request, uow, "index.html", kernels=kernels, queue=uow.overview.queue(),
                   revisions=uow.overview.recent_revisions())


@router.get(routes.KERNEL_PAGE, response_class=HTMLResponse)
def kernel_page(request: Request, uow: UnitDep, cache: SeriesCacheDep, name: KernelName,
                gpu: Annotated[GpuKind | None, Query()] = None,
                shape: Annotated[ShapeName | None, Query()] = None) -> HTMLResponse:
    """A kernel's history per metric group on one GPU kind, optionally one shape."""
    # Reading and bucketing 10,000 revisions costs more than the page's 200 ms budget; the result
    # changes only when a verdict (with its metrics) is stored, which the version sees.
    key = ("kernel", name, gpu, shape, uow.history.data_version(name))
    view = request.app.state.page_cache.get_or_build(key, lambda: _kernel_view(uow, cache, name, gpu, shape))
    return _render(request, uow, "kernel.html", view)


def _kernel_view(uow: UnitOfWork, cache: SeriesCache, name: str, gpu: str | None, shape: str | None) -> KernelView:
    page = uow.history.kernel_page(name, gpu, shape, traces=wanted_traces, peer_metrics=PEER_METRIC,
                                   max_points=PAGE_POINTS, cache=cache)
    if page is None:
        raise HTTPException(404, f"no kernel {name!r} has a verdict yet")
    return kernel_view(page)


@router.get(routes.REVISION_PAGE, response_class=HTMLResponse)
def revision_page(request: Request, uow: UnitDep, ref: str) -> HTMLResponse:
    """Rule tables first, then timings, correctness, ncu, ptxas/SASS, logs and artifacts. `ref`:
    the revision's id, sha (or a unique prefix) or branch."""
    try:
        detail = uow.revisions.detail(resolve(uow, ref))
    except RefProblem as exc:
        raise HTTPException(404, str(exc)) from None
    if detail is None:
        raise HTTPException(404, f"no revision {ref!r}")
    return _render(request, uow, "revision.html", revision_view(detail, request.app.state.gate.settings.data_dir))


@router.get(routes.COMPARE_PAGE, response_class=HTMLResponse)
def compare_page(request: Request, uow: UnitDep, a: str | None = None, b: str | None = None) -> HTMLResponse:
    """Two revisions side by side: verdicts and every shared metric with its delta. `a` and `b`:
    ids, shas (or unique prefixes) or branches."""
    if not (a or "").strip() and not (b or "").strip():
        return _render(request, uow, "compare.html", CompareView("", "", problem="Name two revisions to compare."))
    try:
        ids = resolve(uow, a), resolve(uow, b)
    except RefProblem as exc:
        return _render(request, uow, "compare.html", CompareView(a or "", b or "", problem=str(exc)),
                       status_code=404)
    return _render(request, uow, "compare.html",
                   compare_view(uow.revisions.detail(ids[0]), uow.revisions.detail(ids[1]),
                                uow.overview.compared_metrics(*ids), a, b))
