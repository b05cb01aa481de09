"""Statistics of timing samples. Pure: numbers in, numbers out, no I/O, no GPU.

The latency rule (`regression_call`), as asv's: a regression only when the whole bootstrap interval
of the median ratio lies above 1 + threshold *and* Mann-Whitney says significant. `INCONCLUSIVE`
never means "no difference", only that these samples cannot tell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats as sps

# Asymptotic standard error of the sample median for a normal distribution: sqrt(pi/2) * sigma / sqrt(n)
# (e.g. Kenney & Keeping, Mathematics of Statistics, 1962). sigma is estimated robustly from the median
# absolute deviation: sigma ~= 1.4826 * MAD (consistent for the normal).
_MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Summary:
    median_us: float
    p10_us: float
    p90_us: float


@dataclass(frozen=True)
class Comparison:
    ratio: float          # candidate median / baseline median (> 1: candidate slower)
    ci_low: float         # bootstrap interval of the ratio
    ci_high: float
    p_value: float        # two-sided Mann-Whitney U


class RegressionCall(StrEnum):
    REGRESSION = "regression"        # interval above 1 + threshold and significant
    NO_REGRESSION = "no_regression"  # interval below 1 + threshold
    INCONCLUSIVE = "inconclusive"    # interval straddles 1 + threshold


def summarize(samples_us: Sequence[float]) -> Summary:
    if len(samples_us) == 0:
        raise ValueError("summarize: no samples")
    p10, med, p90 = np.percentile(np.asarray(samples_us, dtype=float), [10, 50, 90])
    return Summary(median_us=float(med), p10_us=float(p10), p90_us=float(p90))


def median_rel_se_pct(samples_us: Sequence[float]) -> float:
    """Relative standard error of the median, in percent (inf with fewer than 3 samples)."""
    x = np.asarray(samples_us, dtype=float)
    if x.size < 3:
        return math.inf
    med = float(np.median(x))
    if med <= 0:
        return math.inf
    sigma = _MAD_TO_SIGMA * float(np.median(np.abs(x - med)))
    return 100.0 * _MEDIAN_SE_FACTOR * sigma / math.sqrt(x.size) / med


def enough_samples(samples_us: Sequence[float], target_rel_se_pct: float, min_samples: int) -> bool:
    """Adaptive stopping: at least `min_samples`, and the median known to `target_rel_se_pct`."""
    return len(samples_us) >= min_samples and median_rel_se_pct(samples_us) <= target_rel_se_pct


def _median_ratio(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(a, axis=axis) / np.median(b, axis=axis)


def compare(candidate_us: Sequence[float], baseline_us: Sequence[float], *, confidence: float = 0.95,
            resamples: int = 2000, seed: int = 0) -> Comparison:
    """Median ratio with a percentile-bootstrap interval (sides resampled independently) and the
    Mann-Whitney U p-value. Not BCa: its jackknife is slow for medians of thousands of samples and
    degenerate for the tied values that timers quantised to 0.5 ns produce."""
    a = np.asarray(candidate_us, dtype=float)
    b = np.asarray(baseline_us, dtype=float)
    if a.size < 2 or b.size < 2:
        raise ValueError("compare: need at least 2 samples per side")
    ratio = float(np.median(a) / np.median(b))
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return Comparison(ratio, ratio, ratio, 1.0 if ratio == 1.0 else 0.0)
    kwargs = dict(vectorized=True, paired=False, confidence_level=confidence, n_resamples=resamples,
                  method="percentile", batch=250)
    try:
        boot = sps.bootstrap((a, b), _median_ratio, rng=np.random.default_rng(seed), **kwargs)
    except TypeError:  # scipy < 1.15 names the generator `random_state`
        boot = sps.bootstrap((a, b), _median_ratio, random_state=np.random.default_rng(seed), **kwargs)
    p = float(sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)
    return Comparison(ratio, float(boot.confidence_interval.low), float(boot.confidence_interval.high), p)


def regression_call(comparison: Comparison, threshold_pct: float, alpha: float = 0.05) -> RegressionCall:
    """The latency rule on one comparison (see the module docstring)."""
    limit = 1.0 + threshold_pct / 100.0
    if comparison.ci_low > limit and comparison.p_value < alpha:
        return RegressionCall.REGRESSION
    if comparison.ci_high <= limit:
        return RegressionCall.NO_REGRESSION
    return RegressionCall.INCONCLUSIVE   # straddles, or above but not significant: more samples can tell
