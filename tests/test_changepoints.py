"""Change points: a real step is found where it is, noise alone rarely produces one."""

from __future__ import annotations

import numpy as np
import pytest

from gate.changepoints import MAX_POINTS, detect, noise_sigma


def test_detect_finds_a_latency_step_at_its_index():
    rng = np.random.default_rng(7)
    series = np.r_[rng.normal(410.0, 4.0, 40), rng.normal(452.0, 4.0, 25)]
    points = detect(series.tolist())
    assert [p.index for p in points] == [40]
    assert points[0].before == pytest.approx(410.0, abs=2.0)
    assert points[0].after == pytest.approx(452.0, abs=2.0)
    assert points[0].shift_pct == pytest.approx(10.2, abs=0.8)


def test_detect_finds_an_improvement_and_a_regression():
    rng = np.random.default_rng(3)
    series = np.r_[rng.normal(100, 1, 30), rng.normal(80, 1, 30), rng.normal(90, 1, 30)]
    assert [p.index for p in detect(series.tolist())] == [30, 60]


def test_detect_on_flat_skewed_noise_rarely_reports_a_change():
    rng = np.random.default_rng(11)
    spurious = sum(len(detect((100 + rng.lognormal(0, 0.5, 60)).tolist())) for _ in range(100))
    assert spurious <= 6   # documented rate is about 2 % per series


def test_detect_short_series_returns_nothing():
    assert detect([1.0, 5.0, 1.0, 5.0, 9.0]) == []


def test_detect_constant_series_returns_nothing():
    assert detect([96.0] * 30) == []


def test_detect_noise_free_register_jump_is_exact():
    points = detect([96.0] * 12 + [128.0] * 9)
    assert [(p.index, p.before, p.after) for p in points] == [(12, 96.0, 128.0)]


def test_detect_refuses_series_longer_than_the_limit():
    with pytest.raises(ValueError, match="down-sample"):
        detect([1.0] * (MAX_POINTS + 1))


def test_detect_refuses_nan():
    with pytest.raises(ValueError, match="finite"):
        detect([1.0] * 10 + [float("nan")] + [1.0] * 10)


def test_noise_sigma_ignores_a_level_shift():
    rng = np.random.default_rng(5)
    noise = rng.normal(0, 2.0, 400)
    shifted = noise + np.r_[np.zeros(200), np.full(200, 50.0)]
    assert noise_sigma(shifted.tolist()) == pytest.approx(2.0, rel=0.15)


def test_detect_ignores_a_rejected_spike_in_a_flat_series():
    rng = np.random.default_rng(2)
    series = rng.normal(4.0, 0.05, 60)
    series[41] = 18.5                      # one revision with heavy bank conflicts, never landed
    assert detect(series.tolist()) == []


def test_detect_ignores_a_spike_in_noise_free_registers():
    assert detect([96.0] * 20 + [168.0] + [96.0] * 20) == []


def test_detect_on_level_scaled_noise_finds_only_the_drop():
    rng = np.random.default_rng(4)
    conflicts_pct = np.r_[4.2 * (1 + rng.normal(0, 0.05, 30)), 0.8 * (1 + rng.normal(0, 0.05, 30))]
    assert [p.index for p in detect(conflicts_pct.tolist())] == [30]
