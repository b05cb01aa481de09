"""What each page shows, as typed view models built from read models (`gate.read_models`): the
routes (`gate.api.pages`) fetch through a unit of work, build one of these and render it. A view's
fields are its template's names; figures are built here, already serialized to page-safe JSON."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

from gate.api.source_view import SourceView, source_views
from gate.domain.names import Metric, Side, Stage
from gate.domain.results import CorrectnessCase, FunctionResources, KernelMetrics
from gate.domain.verdict import Verdict
from gate.domain.manifest import FLAG_KEYS
from gate.domain.rule_catalog import Rule
from gate.domain.wording import checked_calls_words, format_value, gpu_words, plural, reason_beside
from gate.figures.gpu_watch import GpuWatchPanel, gpu_watch_panel
from gate.figures.kernel_page import Chart, Flat, LegendItem, kernel_charts, page_legend
from gate.figures.revision import compare_figure, ncu_figure, sass_figure, timing_figure
from gate.figures.revision_table import revision_table
from gate.figures.rule_table import RuleTable, rule_table
from gate.figures.series_charts import Line
from gate.nvidia.roofline import model_peak
from gate.read_models.compare import CompareRow, compare_rows, judged_metrics
from gate.read_models.kernel_series import KernelHistory, KernelPage
from gate.read_models.revision import ArtifactDetail, JobDetail, RevisionDetail, RevisionMetric, StageDetail
from gate.storage import artifacts as stored_files

# `tojson` escapes <, > and & (safe inside <script>); compact and unsorted keeps big charts cheap.
JSON_SEPARATORS = (",", ":")
VERDICTS = frozenset(v.value for v in Verdict)
# How the files of a job read on its page; the GPU child's own result.json is the `result` file's
# measurement without the verdict, so it is listed only when the stored `result` is missing.
FILE_LABELS = {"result": "result and verdict (JSON)", "result_json": "result of the GPU child (JSON)",
               "request_json": "job request (JSON)", "build_log": "build log", "ptxas_log": "ptxas -v log",
               "ncu_report": "Nsight Compute report (.ncu-rep)"}


def figure_json(figure: dict | list) -> Markup:
    """A figure as the `tojson` filter writes it (<, >, & escaped: safe inside <script>)."""
    return Markup(htmlsafe_json_dumps(figure, separators=JSON_SEPARATORS))


@dataclass(frozen=True)
class Banners:
    """What the top of every page says about the data: synthetic, or not measured on a GPU."""

    synthetic: bool
    unmeasured: str


def banners(cpu: int, total: int, synthetic: bool) -> Banners:
    """From (verdicts judged without a GPU, all verdicts) and whether any revision is sample data."""
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
    return Banners(synthetic, unmeasured)


@dataclass(frozen=True)
class KernelView:
    kernel: str
    gpu: str
    gpus: list[str]
    shape: str
    shapes: list[str]
    history: KernelHistory
    flat: list[Flat]                 # charts left out because all they would show is zero
    legend: list[LegendItem]
    revisions: Markup                # the revision table every chart's points refer to
    charts: list[Chart]              # each figure already page-safe JSON


def kernel_view(page: KernelPage) -> KernelView:
    peak = peak_line(page.gpu)
    flat: list[Flat] = []
    charts = kernel_charts(page.history, page.rules, page.peers, peak, flat)
    legend = page_legend(charts, f"{peak.label}: {format_value(peak.value, 'TFLOP/s')}" if peak else "")
    return KernelView(page.kernel, page.gpu, page.gpus, page.shape, page.shapes, page.history, flat, legend,
                      figure_json(revision_table(page.history.details)),
                      [replace(c, figure=figure_json(c.figure)) for c in charts])


def peak_line(gpu: str) -> Line | None:
    """The GPU's physical dense 16-bit tensor peak (`gate.nvidia.roofline`, the one table of
    datasheet peaks): no kernel whose results pass correctness can be faster than it."""
    found = model_peak(gpu)
    if found is None:
        return None
    model, peak = found
    return Line(f"{model} peak (dense fp16/bf16, datasheet)", peak.tflops_16bit)


@dataclass(frozen=True)
class JobView:
    """One job on the revision page, figures built from its typed results. Only files that exist
    under the data directory are linked: a link that answers 404 says nothing."""

    job: JobDetail
    stages: list[StageDetail]
    timings: list[dict]
    rules: RuleTable | None
    gpu_watch: GpuWatchPanel | None  # what NVML saw while timing; None where nothing was timed
    ncu: dict | None
    ncu_rows: list[KernelMetrics]
    ncu_base: dict[str, KernelMetrics]
    ncu_baseline_note: str
    source_views: list[SourceView]
    files: list[tuple[ArtifactDetail, str]]
    files_gone: int
    functions: list[FunctionResources]
    sass: dict | None
    cases: list[CorrectnessCase]
    build_log: str
    ptxas_log: str
    report: ArtifactDetail | None    # the .ncu-rep
    facts: list[str] = field(default_factory=list)   # under the reason: a change of flags, what the checks catch


@dataclass(frozen=True)
class RevisionView:
    rev: RevisionDetail
    jobs: list[JobView]              # the jobs that decided the revision first
    running: bool                    # the page refreshes itself until the revision is final


def revision_view(rev: RevisionDetail, data_dir: Path) -> RevisionView:
    jobs = [job_view(job, rev, data_dir) for job in sorted(rev.jobs, key=_worst_first)]
    return RevisionView(rev, jobs, running=rev.status in ("queued", "running"))   # done or cancelled: final


def _worst_first(job: JobDetail) -> int:
    """Jobs whose verdict decided the revision first (reject before accept)."""
    v = job.verdict.verdict if job.verdict else ""
    return Verdict(v).severity if v in VERDICTS else len(VERDICTS)


def job_view(job: JobDetail, rev: RevisionDetail, data_dir: Path) -> JobView:
    bench, static, correctness, build = job.bench, job.static, job.correctness, job.build
    ncu_c = job.profile(Side.CANDIDATE).kernels if job.profile(Side.CANDIDATE) else []
    ncu_b = job.profile(Side.BASELINE).kernels if job.profile(Side.BASELINE) else []
    functions = static.functions if static else []
    timed = [t for t in bench.shapes if t.candidate is not None and t.candidate.samples_us] if bench else []
    watched = bench is not None and bench.gpu_watch is not None and bench.gpu_watch.available
    present = [a for a in job.artifacts if stored_files.resolve(data_dir, a.path) is not None]
    return JobView(
        job=job, stages=job.stages, timings=[timing_figure(t) for t in timed],
        rules=rule_table(job.verdict.rules) if job.verdict else None,
        gpu_watch=gpu_watch_panel(bench, job.environment, job.baseline_environment) if timed or watched else None,
        ncu=ncu_figure(ncu_c, ncu_b, f"candidate {rev.sha[:8]}",
                       f"baseline {(rev.base_sha or '')[:8]}".strip()) if ncu_c else None,
        ncu_rows=ncu_c, ncu_base={k.shape: k for k in ncu_b},
        ncu_baseline_note=baseline_profile_note(job, rev) if ncu_c and not ncu_b else "",
        source_views=source_views(job.id, job.profile(Side.CANDIDATE), job.profile(Side.BASELINE)),
        files=listed_files(present), files_gone=len(job.artifacts) - len(present),
        functions=functions, sass=sass_figure(functions) if any(f.sass_opcodes for f in functions) else None,
        cases=correctness.cases if correctness else [],
        build_log=build.log if build else "", ptxas_log=static.log if static else "",
        report=next((a for a in present if a.kind in ("ncu_report", "ncu-rep") or a.path.endswith(".ncu-rep")),
                    None),
        facts=job_facts(job))


def job_facts(job: JobDetail) -> list[str]:
    """The lines under a job's reason: each change of the manifest's flags (its `static_delta` row,
    which the rule table may fold) and what the job's checked calls would have caught."""
    rows = job.verdict.rules if job.verdict else []
    flags = [r.reason for r in rows if r.rule == Rule.STATIC_DELTA and r.reason.split(":", 1)[0] in FLAG_KEYS]
    checked = job.bench.checked_calls if job.bench is not None else 0
    return flags + ([checked_calls_words(checked)] if checked else [])


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


def listed_files(artifacts: list[ArtifactDetail]) -> list[tuple[ArtifactDetail, str]]:
    """(artifact, label) of each file the page lists, the .ncu-rep apart (it has its own line)."""
    kinds = {a.kind for a in artifacts}
    return [(a, FILE_LABELS.get(a.kind, a.kind.replace("_", " "))) for a in artifacts
            if not (a.kind == "result_json" and "result" in kinds) and a.kind not in ("ncu_report", "ncu-rep")
            and not a.path.endswith(".ncu-rep")]


@dataclass(frozen=True)
class CompareView:
    """Two revisions side by side; `problem` says why there is nothing to compare."""

    ref_a: str                       # what the person typed
    ref_b: str
    a: RevisionDetail | None = None
    b: RevisionDetail | None = None
    rows: list[CompareRow] = field(default_factory=list)
    chart: dict | None = None        # the candidates' latency changes
    problem: str = ""


def latency_bars(rows: list[CompareRow]) -> tuple[list[float], list[str]]:
    """Each row's bar length and text: a kernel new in one of the two (wgmma added) gets a bar of
    nothing that says so, not an empty row."""
    return ([r.change if r.change is not None else 0.0 for r in rows],
            [r.change_text or ("no figure before" if r.a is None else "no figure after") for r in rows])


def compare_view(left: RevisionDetail, right: RevisionDetail, metrics: list[RevisionMetric], ref_a: str,
                 ref_b: str) -> CompareView:
    judged: dict[tuple[str, str], frozenset[str]] = {}
    for job in (j for rev in (left, right) for j in rev.jobs if j.verdict is not None):
        key = (job.kernel, job.verdict.gpu_kind)
        judged[key] = judged.get(key, frozenset()) | judged_metrics(job.verdict.rules)
    rows = compare_rows(metrics, left.id, right.id, judged)
    lat = [r for r in rows if r.name == Metric.LATENCY_MEDIAN_US and r.series == Side.CANDIDATE]
    several_gpus = len({r.gpu for r in lat}) > 1
    chart = compare_figure([" · ".join([r.kernel, r.shape] + ([gpu_words(r.gpu)] if several_gpus else []))
                            for r in lat], *latency_bars(lat),
                           [r.tone for r in lat], f"{left.sha[:8]} (before)", f"{right.sha[:8]} (after)") \
        if lat else None
    return CompareView(ref_a, ref_b, left, right, rows, chart)
