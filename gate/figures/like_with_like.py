"""History that compares like with like on the kernel page (pure): change points searched within
one environment (GPU model | driver | clock policy) at a time, in SM kilocycles where that
environment's clocks differed between jobs, and a marker where the environment changes, so a move
of hardware or driver is never read as a change of the kernel (issue 14)."""

from __future__ import annotations

from collections.abc import Sequence

from gate.changepoints import ChangePoint, detect_like_with_like
from gate.domain.environment import describe
from gate.domain.names import Metric, Side
from gate.read_models.kernel_series import KernelHistory, SeriesHistory

ENV_COLOR = "#7c3aed"
# The figure whose cycle-normalised twin change points use, and that twin.
CYCLE_TWIN = {Metric.LATENCY_MEDIAN_US.value: Metric.LATENCY_MEDIAN_KCYCLES.value}


def cycle_traces(shapes: Sequence[str]) -> list[tuple[str, str, str]]:
    """The kilocycle traces the page reads beside the latency it draws (not drawn themselves)."""
    return [(Metric.LATENCY_MEDIAN_KCYCLES.value, s, Side.CANDIDATE.value) for s in shapes]


def change_points(history: KernelHistory, s: SeriesHistory) -> list[ChangePoint]:
    """`s`'s change points, per environment, in kilocycles where its clocks differed."""
    cycles = None
    twin_name = CYCLE_TWIN.get(s.name)
    twin = next((t for t in history.series if (t.name, t.shape, t.series) == (twin_name, s.shape, s.series)),
                None)
    if twin is not None:
        by_revision = dict(zip(twin.revision_ids.tolist(), twin.value.tolist()))
        cycles = [by_revision.get(r, float("nan")) for r in s.revision_ids.tolist()]
    return detect_like_with_like(s.value, s.environments, cycles)


def environment_changes(s: SeriesHistory) -> list[tuple[int, str]]:
    """(position, new environment) wherever a point's environment differs from the point before."""
    envs = s.environments
    return [(i, envs[i]) for i in range(1, len(envs)) if envs[i] != envs[i - 1]]


def mark_environments(figure: dict, series: Sequence[SeriesHistory]) -> dict:
    """`figure` with a dotted line and the new environment's name where the first series' environment
    changes; the hover of each point already names its revision."""
    if not series:
        return figure
    layout = figure["layout"]
    s = series[0]
    for i, env in environment_changes(s):
        x = int(s.x[i]) - 0.5
        layout.setdefault("shapes", []).append({
            "type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
            "line": {"color": ENV_COLOR, "width": 1.2, "dash": "dot"}})
        layout.setdefault("annotations", []).append({
            "x": x, "y": 0.0, "xref": "x", "yref": "paper", "yanchor": "bottom", "xanchor": "left",
            "showarrow": False, "text": f"environment: {describe(env)}",
            "font": {"size": 10, "color": ENV_COLOR}})
    return figure
