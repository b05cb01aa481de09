"""Figures of the revision and compare pages: timing distributions, ncu beside baseline, SASS."""

from __future__ import annotations

from gate.domain.names import NCU_METRICS, Side
from gate.figures.palette import PEER_COLOR, SIDE_COLOR, base_layout

NCU_FIELDS = tuple((m.value, m.info.label) for m in NCU_METRICS)   # (KernelMetrics key, bar label)


def timing_figure(shape_timing: dict) -> dict:
    """Box plots of one shape's samples: candidate, baseline and every peer (a stored ShapeTiming)."""
    sides = [(side.value, shape_timing.get(side.value)) for side in (Side.CANDIDATE, Side.BASELINE)]
    sides += sorted((shape_timing.get("peers") or {}).items())
    data = []
    for name, timing in sides:
        if not timing or not timing.get("samples_us"):
            continue
        color = SIDE_COLOR.get(name) or PEER_COLOR.get(name, "#64748b")
        data.append({"type": "box", "name": name, "x": timing["samples_us"], "orientation": "h",
                     "boxpoints": "all", "jitter": 0.4, "pointpos": 0, "marker": {"size": 3,
                     "color": color, "opacity": 0.55}, "line": {"color": color, "width": 1.4},
                     "fillcolor": "rgba(0,0,0,0)",
                     "hovertemplate": "%{x:.4g} µs<extra>" + name + "</extra>"})
    ratio = shape_timing.get("ratio")
    title = shape_timing.get("shape", "")
    if ratio is not None:
        title += f" · candidate/baseline {ratio:.3f}"
        if shape_timing.get("ratio_ci_low") is not None:
            title += f" [{shape_timing['ratio_ci_low']:.3f}, {shape_timing['ratio_ci_high']:.3f}]"
    layout = base_layout(title, "", height=110 + 42 * max(1, len(data)))
    layout["xaxis"]["title"] = {"text": "µs per call (each point one interleaved round)"}
    layout["yaxis"]["autorange"] = "reversed"
    layout["yaxis"]["automargin"] = True   # peer names (sdpa_efficient, cublas) must not be clipped
    layout["showlegend"] = False
    return {"data": data, "layout": layout}


def ncu_figure(candidate: list[dict], baseline: list[dict]) -> dict:
    """Grouped bars: the gate's ncu ratios per shape, candidate beside baseline (KernelMetrics JSON)."""
    data = []
    for side, rows in ((Side.BASELINE.value, baseline), (Side.CANDIDATE.value, candidate)):
        for row in rows:
            present = [(label, row.get(key)) for key, label in NCU_FIELDS if row.get(key) is not None]
            if not present:
                continue
            data.append({"type": "bar", "name": f"{side} · {row.get('shape') or row.get('kernel')}",
                         "x": [p[0] for p in present], "y": [p[1] for p in present],
                         "marker": {"color": SIDE_COLOR[side],
                                    "pattern": {"shape": "" if len(data) % 2 == 0 else "/"}},
                         "hovertemplate": "%{x}: %{y:.3g} %<extra>%{fullData.name}</extra>"})
    layout = base_layout("Nsight Compute: candidate beside baseline", "% of peak / % conflicts")
    layout["barmode"] = "group"
    return {"data": data, "layout": layout}


def sass_figure(functions: list[dict]) -> dict:
    """SASS opcode counts of the static stage (FunctionResources JSON), one trace per arch summed over
    the kernel's functions and instantiations: a kernel with 16 instantiations stays one bar group per
    opcode, and the functions table beside it breaks the counts down."""
    data = []
    opcodes = sorted({op for f in functions for op in (f.get("sass_opcodes") or {})})
    archs = list(dict.fromkeys(f.get("arch", "?") for f in functions))
    for arch in archs:
        mine = [f for f in functions if f.get("arch", "?") == arch]
        totals = [sum((f.get("sass_opcodes") or {}).get(op, 0) for f in mine) for op in opcodes]
        label = f"{arch} ({len(mine)} functions)" if len(mine) > 1 else arch
        data.append({"type": "bar", "name": label, "x": opcodes, "y": totals,
                     "hovertemplate": "%{x}: %{y}<extra>%{fullData.name}</extra>"})
    layout = base_layout("SASS instructions", "count")
    layout["barmode"] = "group"
    return {"data": data, "layout": layout}


def compare_figure(shapes: list[str], a_us: list[float | None], b_us: list[float | None],
                   a_label: str, b_label: str) -> dict:
    """Median latency per shape of two revisions, side by side."""
    layout = base_layout("Median latency per shape", "µs")
    layout["barmode"] = "group"
    data = [{"type": "bar", "name": label, "x": shapes, "y": values,
             "marker": {"color": color}, "hovertemplate": "%{x}: %{y:.4g} µs<extra>" + label +
             "</extra>"}
            for label, values, color in ((a_label, a_us, "#94a3b8"), (b_label, b_us, "#2563eb"))]
    return {"data": data, "layout": layout}
