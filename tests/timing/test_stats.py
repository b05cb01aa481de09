import math

import numpy as np
import pytest

from gate.timing import stats
from gate.timing.stats import Comparison, RegressionCall


def _noisy(median_us: float, cv: float, n: int, seed: int) -> list[float]:
    return list(np.random.default_rng(seed).normal(median_us, cv * median_us, n))


def test_summarize_gives_median_and_deciles():
    s = stats.summarize([float(x) for x in range(1, 102)])   # 1..101
    assert s.median_us == 51.0
    assert s.p10_us == pytest.approx(11.0)
    assert s.p90_us == pytest.approx(91.0)


def test_summarize_refuses_no_samples():
    with pytest.raises(ValueError, match="no samples"):
        stats.summarize([])


def test_median_rel_se_shrinks_with_the_square_root_of_n():
    small = stats.median_rel_se_pct(_noisy(100.0, 0.02, 400, seed=1))
    large = stats.median_rel_se_pct(_noisy(100.0, 0.02, 40_000, seed=2))
    assert large == pytest.approx(small / 10, rel=0.2)


def test_median_rel_se_matches_the_normal_theory():
    # sigma 2 % of the median, n = 400: SE(median) = sqrt(pi/2) * 2 % / 20 = 0.125 %
    assert stats.median_rel_se_pct(_noisy(100.0, 0.02, 400, seed=3)) == pytest.approx(0.125, rel=0.15)


def test_median_rel_se_is_infinite_for_too_few_samples():
    assert math.isinf(stats.median_rel_se_pct([1.0, 2.0]))


def test_enough_samples_needs_both_the_minimum_and_the_precision():
    precise = _noisy(10.0, 0.001, 50, seed=4)
    assert not stats.enough_samples(precise[:10], target_rel_se_pct=0.5, min_samples=20)
    assert stats.enough_samples(precise, target_rel_se_pct=0.5, min_samples=20)
    noisy = _noisy(10.0, 0.5, 50, seed=5)
    assert not stats.enough_samples(noisy, target_rel_se_pct=0.5, min_samples=20)


def test_compare_finds_a_three_percent_slowdown():
    c = stats.compare(_noisy(103.0, 0.01, 300, seed=6), _noisy(100.0, 0.01, 300, seed=7))
    assert c.ratio == pytest.approx(1.03, abs=0.003)
    assert c.ci_low < c.ratio < c.ci_high
    assert c.ci_low > 1.02 and c.ci_high < 1.04
    assert c.p_value < 1e-6


def test_compare_of_identical_distributions_is_not_significant():
    c = stats.compare(_noisy(100.0, 0.01, 300, seed=8), _noisy(100.0, 0.01, 300, seed=9))
    assert c.ci_low < 1.0 < c.ci_high
    assert c.p_value > 0.05


def test_compare_of_constant_samples_gives_a_degenerate_interval():
    c = stats.compare([5.0] * 10, [5.0] * 10)
    assert (c.ratio, c.ci_low, c.ci_high, c.p_value) == (1.0, 1.0, 1.0, 1.0)


def test_compare_is_reproducible_for_a_seed():
    a, b = _noisy(101.0, 0.02, 100, seed=10), _noisy(100.0, 0.02, 100, seed=11)
    assert stats.compare(a, b, seed=3) == stats.compare(a, b, seed=3)


def test_compare_needs_two_samples_per_side():
    with pytest.raises(ValueError, match="at least 2"):
        stats.compare([1.0], [1.0, 2.0])


@pytest.mark.parametrize(
    ("comparison", "expected"),
    [
        (Comparison(1.05, 1.04, 1.06, 1e-9), RegressionCall.REGRESSION),
        (Comparison(1.05, 1.04, 1.06, 0.2), RegressionCall.INCONCLUSIVE),   # large but not significant
        (Comparison(1.03, 1.01, 1.05, 1e-4), RegressionCall.INCONCLUSIVE),  # straddles 1.03
        (Comparison(1.01, 1.005, 1.02, 1e-4), RegressionCall.NO_REGRESSION),  # significant, small
        (Comparison(0.90, 0.88, 0.92, 1e-9), RegressionCall.NO_REGRESSION),  # faster
    ],
)
def test_regression_call_needs_the_whole_interval_above_the_threshold(comparison, expected):
    assert stats.regression_call(comparison, threshold_pct=3.0) == expected
