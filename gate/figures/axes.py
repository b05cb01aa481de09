"""Axes that fit what they show (pure): whole commits on the commit axis, a value axis in the unit
a person reads (µs or ms, B or KiB), on a log scale when the values span decades, whole steps for
whole quantities (bytes, registers), and never below zero: every chart of the gate measures
something that cannot be negative (a time, a rate, a percentage, a count).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from gate.domain.wording import display_unit, format_value

LOG_SPAN = 8.0                         # max/min at or above which a linear axis hides the small values
LOG_STEP_DECADES = 4                   # up to this many decades a log axis is labelled at 1-2-5 in each
# A linear axis spans at least this share of its largest value: 32 KiB throughout is drawn flat, not
# as a line wandering over a 31.9-32.3 KiB axis, and 243 -> 247 registers is not drawn as a cliff.
MIN_SPAN_SHARE = 0.2
WHOLE_UNITS = frozenset({"B", "bytes", "regs/thread", "registers", "count"})
_NICE = (1, 2, 5)


@dataclass(frozen=True)
class ValueAxis:
    """How a chart draws its values: divide by `factor`, label them `unit`, and merge `layout`
    into the y axis. `log`: the axis is logarithmic and values are drawn unscaled (the ticks say
    the unit)."""

    unit: str
    factor: float
    log: bool
    layout: dict

    def scale(self, values: Iterable[float]) -> list[float]:
        return [v / self.factor for v in values] if self.factor != 1.0 else list(values)

    def position(self, value: float) -> float:
        """Where an annotation at `value` goes: plotly places annotations on a log axis by log10."""
        scaled = value / self.factor
        return math.log10(scaled) if self.log and scaled > 0 else scaled


def nice_step(span: float, ticks: int = 8) -> float:
    """The 1-2-5 step that puts about `ticks` ticks over `span`."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next((n * power for n in _NICE if n * power >= raw), 10 * power)


def commit_axis(last_x: int) -> dict:
    """An x axis of commit positions 0..last_x: whole numbers only (no 0.5 between two commits)."""
    step = max(1, int(nice_step(max(last_x, 1))))
    return {"tickmode": "linear", "tick0": 0, "dtick": step, "tickformat": "d",
            "range": [-0.5, max(last_x, 1) + 0.5]}


def log_ticks(low: float, high: float, unit: str) -> tuple[list[float], list[str]]:
    """Tick values in `unit` between `low` and `high` (both > 0), at 1-2-5 steps in every decade up to
    `LOG_STEP_DECADES` decades (labelled only at 100 and 1,000, 20-40 could not be read), at decades
    beyond, each written with its unit (`100 µs`, `1 ms`)."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = _NICE if last - first <= LOG_STEP_DECADES else (1,)
    values = [m * 10.0 ** p for p in range(first, last + 1) for m in steps]
    values = [v for v in values if 10.0 ** first <= v <= high * 1.5] or [low, high]
    return values, [format_value(v, unit, digits=3) for v in values]


def value_axis(values: Iterable[float], unit: str, *, log_span: float = LOG_SPAN) -> ValueAxis:
    """The y axis for `values` stored in `unit`: log with unit-labelled ticks when the positive
    values span `log_span` or more; otherwise linear in the display unit of their median."""
    finite = sorted(v for v in values if v is not None and math.isfinite(v))
    positive = [v for v in finite if v > 0]
    if positive and len(positive) == len(finite) and positive[-1] / positive[0] >= log_span:
        ticks, text = log_ticks(positive[0], positive[-1], unit)
        return ValueAxis(display_unit(unit, 1.0)[0], 1.0, True,
                         {"type": "log", "tickvals": ticks, "ticktext": text})
    typical = finite[len(finite) // 2] if finite else 0.0
    shown, factor = display_unit(unit, typical)
    layout: dict = {"rangemode": "nonnegative"}
    if unit in WHOLE_UNITS and finite and factor == 1.0 and all(v == int(v) for v in finite):
        low, high = finite[0], finite[-1]
        if high - low < 5:             # a flat whole quantity: whole steps, not 0.2 B or -1..1
            start = max(0.0, low - 2)
            layout.update({"range": [start, start + 6], "dtick": 1, "tickformat": "d"})
        else:
            layout["tickformat"] = "d"
    return ValueAxis(shown, factor, False, layout)


def fit_range(axis: ValueAxis, values: Iterable[float], plot_px: float, pad: float = 0.06,
              top_px: float = 18.0) -> list[float] | None:
    """The y range (in plotly's axis coordinates: log10 on a log axis) that holds every value, lines
    included, with a margin, and `top_px` free above the highest for its label; never below zero.
    None when the axis already fixes its range."""
    if "range" in axis.layout:
        return None
    scaled = [v / axis.factor for v in values if v is not None and math.isfinite(v)]
    if axis.log:
        scaled = [math.log10(v) for v in scaled if v > 0]
    if not scaled:
        return None
    low, high = min(scaled), max(scaled)
    if not axis.log and high - low < MIN_SPAN_SHARE * abs(high):
        middle, half = (low + high) / 2, MIN_SPAN_SHARE * abs(high) / 2
        low, high = middle - half, middle + half
    span = (high - low) or 1.0
    room = top_px / max(plot_px - top_px, 1.0)
    low, high = low - pad * span, high + max(pad, room) * span
    return [low if axis.log else max(0.0, low), high]
