"""Change points in a metric's history: where its level shifted, found by `ruptures`.

The detector is ruptures' `KernelCPD(kernel="linear")`: PELT over the least-squares (l2) cost,
implemented in C (Truong, Oudre, Vayatis, "Selective review of offline change point detection
methods", Signal Processing 167, 2020). A split pays off when it lowers the squared residuals by more
than the penalty, so the penalty is scaled to the series' own noise:

    pen = PENALTY_FACTOR * sigma**2 * ln(n)

Strictly positive series are searched on a log scale: timing noise and profiler ratios scale with
their level, so after a 5x drop in bank conflicts the noise is 5x smaller too, and one sigma for the
whole series would see "changes" in the noisier part.

Isolated spikes (a rejected revision that never landed) are not level shifts: points further than
`SPIKE_SIGMAS` noise sigmas from the running median of `2 * MIN_SEGMENT - 1` points are replaced by
that median first (a Hampel filter), so runs shorter than `MIN_SEGMENT` cannot open a segment.

`sigma` is estimated robustly from the median absolute first difference (a level shift moves one
difference only, so the estimate ignores the shifts it looks for). ln(n) is the BIC's price of a
parameter; the factor 6 was chosen so that a flat series with skewed (log-normal) timing noise shows
a spurious change point in about 2 % of cases, measured over 200 simulated series each of 60 and
500 points (see tests/unit/test_changepoints.py).

Why not Apache Otava's e-divisive: its wheel pins numpy 2.2 and scipy < 1.17 and pulls in cloud
and chat clients, which would downgrade the numerics the rest of the gate runs on.

Cost grows about quadratically with the length; `detect` refuses series longer than
`MAX_POINTS` so a page never spends seconds here: callers pass down-sampled series.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ruptures
from scipy.ndimage import median_filter

PENALTY_FACTOR = 6.0
MIN_SEGMENT = 5          # points on each side of a change; fewer is noise, not a level
SPIKE_SIGMAS = 5.0
MAX_POINTS = 2500        # ~15 ms at 2,000 points on one core
_MAD_TO_SIGMA = 1.0 / (0.6745 * np.sqrt(2.0))   # MAD of N(0, 2 sigma^2) differences -> sigma
# Within one environment, jobs whose SM clocks (kilocycles / µs) differ by more than this are compared
# in cycles: GPU Boost steps are ~15 MHz (0.8 % of 1980 MHz).
CLOCK_SPREAD_PCT = 0.5


@dataclass(frozen=True)
class ChangePoint:
    index: int               # first point of the new level (position in the input sequence)
    before: float            # mean of the segment that ends here
    after: float             # mean of the segment that starts here
    basis: str = ""          # "" = the values themselves; "kcycles" = searched on cycle-normalised figures

    @property
    def shift_pct(self) -> float:
        """Relative change of the level, in percent of the level before (0 when that is 0)."""
        return 0.0 if self.before == 0 else 100.0 * (self.after - self.before) / abs(self.before)


def noise_sigma(values: Sequence[float]) -> float:
    """Robust standard deviation of the point-to-point noise (0 for fewer than 3 points)."""
    if len(values) < 3:
        return 0.0
    diffs = np.diff(np.asarray(values, dtype=float))
    return float(np.median(np.abs(diffs - np.median(diffs))) * _MAD_TO_SIGMA)


def despike(signal: np.ndarray) -> np.ndarray:
    """`signal` with isolated spikes replaced by the running median (Hampel filter)."""
    running = median_filter(signal, size=2 * MIN_SEGMENT - 1, mode="nearest")
    residual = signal - running
    sigma = float(np.median(np.abs(residual))) / 0.6745
    # A clean step survives a median filter exactly, so in a noise-free series (sigma 0) every
    # point off the running median is a spike.
    return np.where(np.abs(residual) > SPIKE_SIGMAS * sigma, running, signal)


def detect(values: Sequence[float]) -> list[ChangePoint]:
    """Level shifts in `values` (in order), each with the means of the segments around it.

    Returns [] for series too short to hold two segments, and for series without noise that do not
    change. A constant series with one jump (sigma 0) reports that jump. If it returns no change
    points, a small shift may still be real: it was not larger than the series' noise allows to tell.
    """
    n = len(values)
    if n > MAX_POINTS:
        raise ValueError(f"{n} points: down-sample to at most {MAX_POINTS} before detecting")
    if n < 2 * MIN_SEGMENT:
        return []
    signal = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(signal)):
        raise ValueError("values must be finite")
    signal = despike(signal)
    searched = np.log(signal) if signal.min() > 0 else signal
    sigma = noise_sigma(searched)
    if sigma == 0.0:
        # Noise-free (e.g. register counts): any move is a change; a tiny penalty keeps it exact.
        scale = float(np.ptp(searched))
        if scale == 0.0:
            return []
        sigma = scale * 1e-3
    penalty = PENALTY_FACTOR * sigma**2 * np.log(n)
    ends = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT).fit(searched).predict(pen=penalty)
    bounds = [0, *[int(e) for e in ends]]      # each change starts a segment: [start, change) and [change, end)
    return [ChangePoint(index=change, before=float(signal[start:change].mean()), after=float(signal[change:end].mean()))
            for start, change, end in zip(bounds, bounds[1:], bounds[2:])]


def detect_like_with_like(values: Sequence[float], environments: Sequence[str],
                          kcycles: Sequence[float] | None = None) -> list[ChangePoint]:
    """Change points of `values` searched within each environment's own points, never across two:
    a move of GPU model, driver or clock policy is not a change of the kernel (issue 14: one binary
    read 457 µs in one arrangement and 597 µs in another, and the page showed a 30 % "change").

    `environments` names each point's environment (empty: all one). `kcycles`, aligned with `values`
    (NaN where the clock was not seen), holds the same figures in SM kilocycles: where every point of
    an environment has one and their clocks differ by more than `CLOCK_SPREAD_PCT`, that environment
    is searched in cycles (`ChangePoint.basis` says so). Indices are positions in `values`."""
    signal = np.asarray(values, dtype=float)
    keys = list(environments) or [""] * signal.size
    if len(keys) != signal.size:
        raise ValueError(f"{len(keys)} environments for {signal.size} values")
    cycles = None if kcycles is None else np.asarray(kcycles, dtype=float)
    if cycles is not None and cycles.size != signal.size:
        raise ValueError(f"{cycles.size} kilocycle figures for {signal.size} values")
    found: list[ChangePoint] = []
    for key in dict.fromkeys(keys):
        where = np.flatnonzero(np.array([k == key for k in keys]))
        searched, basis = signal[where], ""
        if cycles is not None and _clocks_differ(signal[where], cycles[where]):
            searched, basis = cycles[where], "kcycles"
        found += [ChangePoint(int(where[c.index]), c.before, c.after, basis) for c in detect(searched)]
    return sorted(found, key=lambda c: c.index)


def _clocks_differ(us: np.ndarray, kcycles: np.ndarray) -> bool:
    """Every point has a cycle figure, and the clocks behind them (kcycles / µs) differ."""
    if not us.size or not np.all(np.isfinite(kcycles)) or np.any(us <= 0):
        return False
    mhz = kcycles / us
    return bool((mhz.max() - mhz.min()) / mhz.max() * 100 > CLOCK_SPREAD_PCT)
