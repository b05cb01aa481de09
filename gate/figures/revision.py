"""Figures of the revision and compare pages: timing distributions, ncu beside baseline, SASS."""

from __future__ import annotations

from gate.domain.names import NCU_METRICS, Metric, Side
from gate.domain.results import FunctionResources, KernelMetrics, ShapeTiming
from gate.domain.wording import display_unit, format_value
from gate.figures.axes import value_axis
from gate.figures.palette import PEER_COLOR, SIDE_COLOR, base_layout

NCU_FIELDS = tuple((m.value, m.info.label) for m in NCU_METRICS)   # (KernelMetrics key, bar label)


def timing_figure(shape_timing: ShapeTiming) -> dict:
    """Box plots of one shape's samples: candidate, baseline and every peer."""
    sides = [(Side.CANDIDATE.value, shape_timing.candidate), (Side.BASELINE.value, shape_timing.baseline)]
    sides += sorted(shape_timing.peers.items())
    timed = [(name, timing) for name, timing in sides if timing is not None and timing.samples_us]
    medians = sorted(x for _, timing in timed for x in timing.samples_us)
    unit, factor = display_unit(Metric.LATENCY_MEDIAN_US.unit, medians[len(medians) // 2] if medians else 0.0)
    data = []
    for name, timing in timed:
        color = SIDE_COLOR.get(name) or PEER_COLOR.get(name, "#64748b")
        data.append({"type": "box", "name": name, "x": [x / factor for x in timing.samples_us],
                     "orientation": "h",
                     "boxpoints": "all", "jitter": 0.4, "pointpos": 0, "marker": {"size": 3,
                     "color": color, "opacity": 0.55}, "line": {"color": color, "width": 1.4},
                     "fillcolor": "rgba(0,0,0,0)",
                     "hovertemplate": "%{x:.4g} " + unit + "<extra>" + name + "</extra>"})
    ratio, title = shape_timing.ratio, shape_timing.shape
    if ratio is not None:
        title += f" · candidate/baseline {ratio:.3f}"
        low, high = shape_timing.ratio_ci_low, shape_timing.ratio_ci_high
        if low is not None and high is not None:
            title += f" [{low:.3f}, {high:.3f}]"
    layout = base_layout(title, "", height=128 + 42 * max(1, len(data)))
    layout["xaxis"]["title"] = {"text": f"{unit} per call (each point one interleaved round)"}
    layout["yaxis"]["autorange"] = "reversed"
    layout["yaxis"]["automargin"] = True   # peer names (sdpa_efficient, cublas) must not be clipped
    layout["showlegend"] = False
    return {"data": data, "layout": layout}


def ncu_figure(candidate: list[KernelMetrics], baseline: list[KernelMetrics],
               candidate_label: str = Side.CANDIDATE.value, baseline_label: str = Side.BASELINE.value) -> dict:
    """Grouped bars of the gate's ncu ratios, grouped by shape then metric:
    one trace per side, named by its side (and sha), so the legend says which bar is which.
    Without baseline rows only the candidate is drawn and the title says so (the page says why)."""
    keys = _launch_keys(candidate)
    base = dict(zip(_launch_keys(baseline), baseline))
    x0, x1, ys, yb = [], [], [], []
    for key, row in zip(keys, candidate):
        other = base.get(key)
        for field, label in NCU_FIELDS:
            mine, theirs = getattr(row, field), getattr(other, field) if other is not None else None
            if mine is None and theirs is None:
                continue
            x0.append(key)
            x1.append(label)
            ys.append(mine)
            yb.append(theirs)
    data = []
    sides = ((baseline_label, Side.BASELINE.value, yb), (candidate_label, Side.CANDIDATE.value, ys)) \
        if baseline else ((candidate_label, Side.CANDIDATE.value, ys),)
    for name, side, values in sides:
        data.append({"type": "bar", "name": name, "x": [x0, x1], "y": values,
                     "marker": {"color": SIDE_COLOR[side]},
                     "hovertemplate": "%{x}: %{y:.3g} %<extra>" + name + "</extra>"})
    title = "Nsight Compute: candidate beside baseline" if baseline else \
        "Nsight Compute: candidate (baseline not profiled)"
    layout = base_layout(title, "% of peak / % conflicts")
    layout["barmode"] = "group"
    layout["showlegend"] = True
    layout["yaxis"]["rangemode"] = "nonnegative"
    return {"data": data, "layout": layout}


def _launch_keys(rows: list[KernelMetrics]) -> list[str]:
    """A label per profiled launch: its shape, numbered when one shape has several launches."""
    names = [row.shape or row.kernel or "?" for row in rows]
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if names.count(name) == 1 else f"{name} #{seen[name]}")
    return out


def sass_figure(functions: list[FunctionResources]) -> dict:
    """SASS opcode counts of the static stage, one trace per arch summed over
    the kernel's functions and instantiations: a kernel with 16 instantiations stays one bar group per
    opcode, and the functions table beside it breaks the counts down."""
    data = []
    opcodes = sorted({op for f in functions for op in f.sass_opcodes})
    archs = list(dict.fromkeys(f.arch for f in functions))
    for arch in archs:
        mine = [f for f in functions if f.arch == arch]
        totals = [sum(f.sass_opcodes.get(op, 0) for f in mine) for op in opcodes]
        label = f"{arch} ({len(mine)} functions)" if len(mine) > 1 else arch
        data.append({"type": "bar", "name": label, "x": opcodes, "y": totals,
                     "hovertemplate": "%{x}: %{y}<extra>%{fullData.name}</extra>"})
    layout = base_layout("SASS instructions", "count")
    layout["barmode"] = "group"
    return {"data": data, "layout": layout}


def compare_figure(shapes: list[str], a_us: list[float | None], b_us: list[float | None],
                   a_label: str, b_label: str) -> dict:
    """Median latency per kernel and shape of two revisions, side by side; on a log axis when the
    shapes span decades (a 9 µs and a 40 ms shape both readable), ticks and hovers in µs or ms."""
    values = [v for v in (*a_us, *b_us) if v is not None]
    axis = value_axis(values, Metric.LATENCY_MEDIAN_US.unit, log_span=10.0)
    layout = base_layout("Median latency per kernel and shape", f"median latency ({axis.unit})"
                         if not axis.log else "median latency (log scale)")
    layout["yaxis"].update(axis.layout)
    layout["barmode"] = "group"
    layout["showlegend"] = True
    layout["xaxis"]["tickangle"] = 0
    data = [{"type": "bar", "name": label, "x": [s.replace(" · ", "<br>") for s in shapes],
             "y": [None if v is None else v / axis.factor for v in values_],
             "customdata": [format_value(v, Metric.LATENCY_MEDIAN_US.unit) for v in values_],
             "marker": {"color": color}, "hovertemplate": "%{x}: %{customdata}<extra>" + label + "</extra>"}
            for label, values_, color in ((a_label, a_us, "#94a3b8"), (b_label, b_us, "#2563eb"))]
    return {"data": data, "layout": layout}
