"""Change points compare like with like: searched per environment, in kilocycles where the clocks of
an environment's jobs differed (gate.changepoints.detect_like_with_like, figures/like_with_like)."""

import numpy as np
import pytest

from gate.changepoints import detect_like_with_like
from gate.figures.like_with_like import change_points, environment_changes, mark_environments
from gate.read_models.kernel_series import KernelHistory, SeriesHistory

RNG = np.random.default_rng(14)
A, B = "H200 | driver 570 | clocks observe", "H200 | driver 575 | clocks observe"


def noisy(level, n):
    return list(level * (1 + 0.002 * RNG.standard_normal(n)))


def test_a_jump_where_the_environment_changes_is_not_a_change():
    values = noisy(457.0, 12) + noisy(597.0, 12)           # issue 14: the same binary, two arrangements
    assert detect_like_with_like(values, [A] * 12 + [B] * 12) == []
    plain = detect_like_with_like(values, [])              # one environment: the jump is found
    assert [c.index for c in plain] == [12]


def test_a_real_change_inside_one_environment_is_found_at_its_position():
    values = noisy(100.0, 10) + noisy(500.0, 10) + noisy(110.0, 10)
    envs = [A] * 10 + [B] * 20
    found = detect_like_with_like(values, envs)
    assert [c.index for c in found] == [20] and found[0].shift_pct == pytest.approx(-78, abs=1)


def test_clocks_that_differ_inside_an_environment_are_compared_in_cycles():
    mhz = np.array([1980.0] * 10 + [1755.0] * 10)          # boost moved; the kernel did not
    us = 1000.0 * 900.0 / mhz * (1 + 0.001 * RNG.standard_normal(20))
    kcycles = us * mhz / 1000
    assert detect_like_with_like(us, [A] * 20) != []       # in µs the clock looks like a change
    assert detect_like_with_like(us, [A] * 20, kcycles) == []
    slower = np.concatenate([kcycles[:10], kcycles[10:] * 1.2])   # 20 % more cycles: a real change
    found = detect_like_with_like(us * np.r_[[1] * 10, [1.2] * 10], [A] * 20, slower)
    assert [(c.index, c.basis) for c in found] == [(10, "kcycles")]


def test_a_missing_cycle_figure_keeps_microseconds():
    values = noisy(100.0, 10) + noisy(150.0, 10)
    cycles = [v * 1.98 for v in values[:-1]] + [float("nan")]
    assert [c.basis for c in detect_like_with_like(values, [A] * 20, cycles)] == [""]


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="2 environments for 3 values"):
        detect_like_with_like([1.0, 2.0, 3.0], [A, B])
    with pytest.raises(ValueError, match="1 kilocycle figures for 2 values"):
        detect_like_with_like([1.0, 2.0], [A, A], [1.0])


def _series(name, values, envs, unit="us"):
    n = len(values)
    v = np.asarray(values, dtype=float)
    return SeriesHistory(name, "s", "candidate", unit, np.arange(n), 100 + np.arange(n), v, v, v,
                         np.ones(n, dtype=np.int64), ["accept"] * n, envs)


def test_the_page_reads_the_kilocycle_twin_and_marks_environment_changes():
    mhz = np.array([1980.0] * 10 + [1755.0] * 10)
    us = 1000.0 * 900.0 / mhz * (1 + 0.001 * RNG.standard_normal(20))
    lat = _series("latency_median_us", us, [A] * 20)
    twin = _series("latency_median_kcycles", us * mhz / 1000, [A] * 20, "kcycles")
    assert change_points(KernelHistory("k", "H200", 20, 1, [lat, twin]), lat) == []
    assert change_points(KernelHistory("k", "H200", 20, 1, [lat]), lat) != []
    moved = _series("latency_median_us", [1.0] * 4, [A, A, B, B])
    assert environment_changes(moved) == [(2, B)]
    figure = mark_environments({"layout": {"shapes": [], "annotations": []}}, [moved])
    assert figure["layout"]["shapes"][0]["x0"] == 1.5
    assert figure["layout"]["annotations"][0]["text"] == f"environment: {B}"
