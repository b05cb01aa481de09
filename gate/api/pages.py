"""The dashboards: server-rendered pages (Jinja templates in `dashboards/`) with plotly charts.

plotly.js is served from the installed `plotly` package, so the pages work without internet.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import StrictUndefined
from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup
from sqlalchemy.orm import Session

from gate.api import page_errors
from gate.api.deps import SeriesCacheDep, SessionDep
from gate.api.revision_refs import RefProblem, resolve
from gate.api.schemas import GpuKind, KernelName, ShapeName
from gate.api.source_view import source_views
from gate.domain import routes
from gate.domain.names import Direction, Metric, Side, Stage
from gate.domain.verdict import Verdict
from gate.domain.wording import format_value, gpu_words, plural, progress_line, reason_beside
from gate.nvidia.roofline import model_peak
from gate.nvidia.symbols import kernel_name
from gate.figures.kernel_page import PEER_METRIC, Flat, kernel_charts, page_legend, wanted_traces
from gate.figures.palette import VERDICT_COLOR
from gate.figures.gpu_watch import gpu_watch_panel
from gate.figures.revision import compare_figure, ncu_figure, sass_figure, timing_figure
from gate.figures.revision_table import revision_table
from gate.figures.rule_table import rule_table
from gate.figures.series_charts import Line
from gate.read_models.compare import compare_rows
from gate.read_models.revision import JobDetail, RevisionDetail
from gate.storage import artifacts as stored_files, dashboard, kernel_series
from gate.storage.series_cache import SeriesCache
from gate.storage.queries import revision_detail

# The templates and static files are the `dashboards` package's data, installed with the wheel.
DASHBOARDS = importlib.resources.files("dashboards")
PLOTLY_JS = importlib.resources.files("plotly") / "package_data" / "plotly.min.js"
PAGE_POINTS = 400      # per trace (a chart is ~550 px wide); beyond it revisions are bucketed

templates = Jinja2Templates(directory=str(DASHBOARDS / "templates"))
# A name a template reads that its context or a read model does not have (a renamed field) is an
# error, not an empty cell.
templates.env.undefined = StrictUndefined
templates.env.globals["verdict_color"] = VERDICT_COLOR
# Every link a page draws is made of the routes' own paths (`gate.domain.routes`).
templates.env.globals["routes"] = routes
templates.env.globals["link"] = routes.link
# `tojson` escapes <, > and & (safe inside <script>); compact and unsorted keeps big charts cheap.
templates.env.policies["json.dumps_kwargs"] = {"separators": (",", ":")}
# The words of every page (`gate.domain.wording`): "no GPU (CPU only ...)" for `cpu`, "45.2 ms" for
# 45,230 us, a reason without its outcome repeated in front, "1 revision".
templates.env.globals["gpu_words"] = gpu_words
templates.env.filters["beside"] = lambda reason, outcome: reason_beside(outcome, reason)
templates.env.filters["value"] = lambda value, unit="", digits=4: format_value(value, unit, digits)
templates.env.filters["plural"] = plural
templates.env.globals["progress_line"] = progress_line
templates.env.filters["kernel_name"] = kernel_name      # a mangled entry name as its source spells it
router = APIRouter(include_in_schema=False)
static_files = StaticFiles(directory=str(DASHBOARDS / "static"))


@router.get(routes.PLOTLY_JS)
def plotly_js() -> FileResponse:
    with importlib.resources.as_file(PLOTLY_JS) as path:
        return FileResponse(path, media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=86400"})


def _render(request: Request, session: Session, name: str, status_code: int = 200,
            **context: object) -> HTMLResponse:
    return templates.TemplateResponse(request, name, {**_banners(session), **context},
                                      status_code=status_code)


def _banners(session: Session) -> dict[str, object]:
    """What the top of every page says about the data: synthetic, or not measured on a GPU."""
    cpu, total = dashboard.unmeasured_verdicts(session)
    if not cpu:
        unmeasured = ""
    elif cpu == total:
        unmeasured = ("No GPU measured these revisions: they were gated on a machine without a CUDA "
                      "device, so correctness, timing and the Nsight Compute profile were not run and "
                      "every verdict is at best incomplete. Registers, shared memory, spills and SASS "
                      "come from the compiler.")
    else:
        unmeasured = (f"{plural(cpu, 'verdict')} of {total} were gated on a machine without a GPU "
                      "(shown as \u201cno GPU\u201d): for those, correctness, timing and the Nsight "
                      "Compute profile were not run.")
    return {"synthetic": dashboard.has_synthetic_revisions(session), "unmeasured": unmeasured}


def error_page(request: Request, status_code: int, message: str) -> HTMLResponse:
    """The HTML page of an error on a page route (`gate.api.page_errors`)."""
    with request.app.state.gate.session_factory() as session:
        return _render(request, session, "error.html", status_code=status_code, status=status_code,
                       title=page_errors.TITLES.get(status_code, "Error"), message=message)


def install_error_pages(app) -> None:  # noqa: ANN001 (a FastAPI app)
    page_errors.install(app, error_page)


@router.get(routes.HOME, response_class=HTMLResponse)
def overview(request: Request, session: SessionDep) -> HTMLResponse:
    """Every kernel's latest verdict per GPU kind, the queue, recent revisions."""
    return _render(request, session, "index.html", kernels=dashboard.kernel_overview(session),
                   queue=dashboard.queue(session), revisions=dashboard.recent_revisions(session))


@router.get(routes.KERNEL_PAGE, response_class=HTMLResponse)
def kernel_page(request: Request, session: SessionDep, store: SeriesCacheDep, name: KernelName,
                gpu: Annotated[GpuKind | None, Query()] = None,
                shape: Annotated[ShapeName | None, Query()] = None) -> HTMLResponse:
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
        raise HTTPException(404, f"no kernel {name!r} has a verdict yet")
    gpu = gpu if gpu in gpus else gpus[0]
    shapes = kernel_series.kernel_shapes(session, name, gpu)
    chosen = [shape] if shape in shapes else shapes
    hist = kernel_series.kernel_history(session, name, gpu,
                                  wanted_traces(chosen, kernel_series.kernel_archs(session, name, gpu)),
                                  max_points=PAGE_POINTS, store=store)
    peers = {key: kernel_series.peer_levels(session, name, gpu, metric, chosen)
             for key, metric in PEER_METRIC.items()}
    peak = peak_line(gpu)
    flat: list[Flat] = []
    charts = kernel_charts(hist, kernel_series.latest_rules(session, name, gpu), peers, peak, flat)
    return {"kernel": name, "gpu": gpu, "gpus": gpus, "shape": shape if shape in shapes else "",
            "shapes": shapes, "history": hist, "flat": flat,
            "legend": page_legend(hist, charts, f"{peak.label}: {format_value(peak.value, 'TFLOP/s')}"
                                  if peak else ""),
            "revisions": figure_json(revision_table(hist.details)),
            "charts": [replace(c, figure=figure_json(c.figure)) for c in charts]}


def gpu_short(kind: str | None) -> str:
    """A GPU kind in a few letters for a crowded cell: "NVIDIA H100 80GB HBM3" -> "H100"; the
    full name stays in the cell's title."""
    words = gpu_words(kind)
    if not words.startswith("NVIDIA "):
        return words
    return words.removeprefix("NVIDIA ").split(" ")[0].split("-")[0]


templates.env.filters["gpu_short"] = gpu_short


def peak_line(gpu: str) -> Line | None:
    """The GPU's physical dense 16-bit tensor peak (`gate.nvidia.roofline`, the one table of
    datasheet peaks): no kernel whose results pass correctness can be faster than it."""
    found = model_peak(gpu)
    if found is None:
        return None
    model, peak = found
    return Line(f"{model} peak (dense fp16/bf16, datasheet)", peak.tflops_16bit)


def figure_json(figure: dict | list) -> Markup:
    """A figure as the `tojson` filter writes it (<, >, & escaped: safe inside <script>)."""
    return Markup(htmlsafe_json_dumps(figure, **templates.env.policies["json.dumps_kwargs"]))


@router.get(routes.REVISION_PAGE, response_class=HTMLResponse)
def revision_page(request: Request, session: SessionDep, ref: str) -> HTMLResponse:
    """Rule tables first, then timings, correctness, ncu, ptxas/SASS, logs and artifacts. `ref`:
    the revision's id, sha (or a unique prefix) or branch."""
    detail = revision_detail(session, _resolved(session, ref))
    if detail is None:
        raise HTTPException(404, f"no revision {ref!r}")
    data_dir = request.app.state.gate.settings.data_dir
    return _render(request, session, "revision.html", rev=detail,
                   jobs=[_job_view(job, detail, data_dir) for job in sorted(detail.jobs, key=_worst_first)],
                   running=detail.status in ("queued", "running"))   # done or cancelled: final


def _resolved(session: Session, ref: str) -> int:
    try:
        return resolve(session, ref)
    except RefProblem as exc:
        raise HTTPException(404, str(exc)) from None


@router.get(routes.COMPARE_PAGE, response_class=HTMLResponse)
def compare_page(request: Request, session: SessionDep, a: str | None = None,
                 b: str | None = None) -> HTMLResponse:
    """Two revisions side by side: verdicts and every shared metric with its delta. `a` and `b`:
    ids, shas (or unique prefixes) or branches."""
    if not (a or "").strip() and not (b or "").strip():
        return _render(request, session, "compare.html", a=None, b=None, ref_a="", ref_b="",
                       problem="Name two revisions to compare.", rows=[], chart=None)
    try:
        ids = resolve(session, a), resolve(session, b)
    except RefProblem as exc:
        return _render(request, session, "compare.html", status_code=404, a=None, b=None,
                       ref_a=a or "", ref_b=b or "", problem=str(exc), rows=[], chart=None)
    left, right = revision_detail(session, ids[0]), revision_detail(session, ids[1])
    rows = compare_rows(dashboard.compared_metrics(session, *ids), *ids)
    lat = [r for r in rows if r.name == Metric.LATENCY_MEDIAN_US and r.series == Side.CANDIDATE]
    several_gpus = len({r.gpu for r in lat}) > 1
    chart = compare_figure([" · ".join([r.kernel, r.shape] + ([gpu_words(r.gpu)] if several_gpus else []))
                            for r in lat], [r.change for r in lat], [r.change_text for r in lat],
                           [r.tone for r in lat], f"{left.sha[:8]} (before)", f"{right.sha[:8]} (after)") \
        if lat else None
    return _render(request, session, "compare.html", a=left, b=right, ref_a=a, ref_b=b, problem="",
                   rows=rows, chart=chart)


VERDICTS = frozenset(v.value for v in Verdict)


def _worst_first(job: JobDetail) -> int:
    """Jobs whose verdict decided the revision first (reject before accept)."""
    v = job.verdict.verdict if job.verdict else ""
    return Verdict(v).severity if v in VERDICTS else len(VERDICTS)


def _job_view(job: JobDetail, rev: RevisionDetail, data_dir: Path) -> dict:
    """What the revision template needs of one job, figures built from its typed results. Only
    files that exist under `data_dir` are linked: a link that answers 404 says nothing."""
    bench, static, correctness, build = job.bench, job.static, job.correctness, job.build
    ncu_c = job.profile(Side.CANDIDATE).kernels if job.profile(Side.CANDIDATE) else []
    ncu_b = job.profile(Side.BASELINE).kernels if job.profile(Side.BASELINE) else []
    functions = static.functions if static else []
    timed = [t for t in bench.shapes if t.candidate is not None and t.candidate.samples_us] if bench else []
    watched = bench is not None and bench.gpu_watch is not None and bench.gpu_watch.available
    present = [a for a in job.artifacts if stored_files.resolve(data_dir, a.path) is not None]
    return {
        "job": job, "stages": job.stages, "timings": [timing_figure(t) for t in timed],
        "rules": rule_table(job.verdict.rules) if job.verdict else None,
        # What NVML saw while timing means nothing for a job where nothing was timed.
        "gpu_watch": gpu_watch_panel(bench, job.environment, job.baseline_environment)
                     if timed or watched else None,
        "ncu": ncu_figure(ncu_c, ncu_b, f"candidate {rev.sha[:8]}",
                          f"baseline {(rev.base_sha or '')[:8]}".strip()) if ncu_c else None,
        "ncu_rows": ncu_c, "ncu_base": {k.shape: k for k in ncu_b},
        "ncu_baseline_note": baseline_profile_note(job, rev) if ncu_c and not ncu_b else "",
        "source_views": source_views(job.id, job.profile(Side.CANDIDATE), job.profile(Side.BASELINE)),
                "files": listed_files(present),
        "files_gone": len(job.artifacts) - len(present),
        "functions": functions,
        "sass": sass_figure(functions) if any(f.sass_opcodes for f in functions) else None,
        "cases": correctness.cases if correctness else [],
        "build_log": build.log if build else "",
        "ptxas_log": static.log if static else "",
        "report": next((a for a in present if a.kind in ("ncu_report", "ncu-rep")
                        or a.path.endswith(".ncu-rep")), None),
    }


def baseline_profile_note(job: JobDetail, rev: RevisionDetail) -> str:
    """Why the Nsight Compute chart has no baseline bars, in one sentence."""
    profiled = job.stage(Side.BASELINE, Stage.PROFILE)
    if profiled is not None:
        what = {"failed": "failed", "error": "hit an error"}.get(profiled.status, "was not run")
        why = reason_beside(profiled.status, profiled.reason) or "no reason was given"
        return f"The baseline's profile {what}: {why}."
    if not rev.base_sha:
        return "This revision has no baseline, so there is nothing to profile beside it."
    built = job.stage(Side.BASELINE, Stage.BUILD)
    if built is None or built.status != "passed":
        why = reason_beside(built.status, built.reason) if built else "it was not built in this job"
        return f"The baseline ({rev.base_sha[:8]}) was not profiled: {why or 'its build did not pass'}."
    return f"The baseline ({rev.base_sha[:8]}) was not profiled in this job."


# How the files of a job read on its page; the GPU child's own result.json is the `result` file's
# measurement without the verdict, so it is listed only when the stored `result` is missing.
FILE_LABELS = {"result": "result and verdict (JSON)", "result_json": "result of the GPU child (JSON)",
               "request_json": "job request (JSON)", "build_log": "build log", "ptxas_log": "ptxas -v log",
               "ncu_report": "Nsight Compute report (.ncu-rep)"}


def listed_files(artifacts: list) -> list[tuple[object, str]]:
    """(artifact, label) of each file the page lists, the .ncu-rep apart (it has its own line)."""
    kinds = {a.kind for a in artifacts}
    return [(a, FILE_LABELS.get(a.kind, a.kind.replace("_", " "))) for a in artifacts
            if not (a.kind == "result_json" and "result" in kinds) and a.kind not in ("ncu_report", "ncu-rep")
            and not a.path.endswith(".ncu-rep")]
