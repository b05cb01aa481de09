"""Figures of the revision and compare pages: timing distributions, ncu beside baseline, SASS."""

from __future__ import annotations

from gate.domain.names import NCU_METRICS, Metric, Side
from gate.domain.results import FunctionResources, KernelMetrics, ShapeTiming
from gate.domain.wording import display_unit, format_value
from gate.figures.axes import value_axis
from gate.domain.verdict import Verdict
from gate.figures.palette import INK, MUTED, PEER_COLOR, SIDE_COLOR, VERDICT_COLOR, base_layout

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
    sides = ((baseline_label, Side.BASELINE.value, yb), (candidate_label, Side.CANDIDATE.value, ys)) \
        if baseline else ((candidate_label, Side.CANDIDATE.value, ys),)
    data = [{"type": "bar", "name": name, "x": [x0, x1], "y": values, "marker": {"color": SIDE_COLOR[side]},
             "hovertemplate": "%{x}: %{y:.3g} %<extra>" + name + "</extra>"} for name, side, values in sides]
    title = "Nsight Compute: candidate beside baseline" if baseline else \
        "Nsight Compute: candidate (baseline not profiled)"
    layout = base_layout(title, "% of peak / % conflicts", height=400)   # the shape x metric labels take ~90 px
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


def compare_figure(labels: list[str], changes: list[float | None], texts: list[str], tones: list[str],
                   a_label: str, b_label: str) -> dict:
    """The change of each kernel and shape's median latency from `a_label` to `b_label`, in % on a
    linear axis around zero: a 2 % regression is as visible as a 40 % one is large (bars of the two
    values on a log axis hid it). Horizontal bars, so long kernel · shape labels never overlap; each
    coloured by its tone ("good", "bad" or "" from the rule's bound, `read_models.compare`)."""
    color = {"good": VERDICT_COLOR[Verdict.ACCEPT.value], "bad": VERDICT_COLOR[Verdict.REJECT.value]}
    data = [{"type": "bar", "orientation": "h", "y": labels, "x": changes, "text": texts,
             "textposition": "outside", "cliponaxis": False,
             "marker": {"color": [color.get(t, MUTED) for t in tones]},
             "hovertemplate": "%{y}: %{text}<extra></extra>"}]
    layout = base_layout(f"Median latency: {b_label} against {a_label}", "", height=150 + 30 * len(labels))
    layout["xaxis"].update({"title": {"text": "change of the median latency (%), below 0 is faster"},
                            "zeroline": True, "zerolinecolor": INK, "ticksuffix": " %"})
    widest = max((abs(c) for c in changes if c is not None), default=1.0) or 1.0
    layout["xaxis"]["range"] = [-widest * 1.35, widest * 1.35]    # room for the text beside each bar
    layout["yaxis"].update({"autorange": "reversed", "automargin": True})
    layout["showlegend"] = False
    return {"data": data, "layout": layout}
