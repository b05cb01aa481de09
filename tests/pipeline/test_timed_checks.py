"""Which timed calls are checked, and how a checked call is judged (issue 25). The torch side of
`TimedChecks` runs in tests/gpu/test_timed_integrity.py; here the choices and the judgement."""

import math
import random

import pytest

from gate.pipeline import timed_checks as tc


def test_every_batch_has_checked_rounds_even_when_the_draw_picks_none():
    class NeverDraws(random.Random):
        def random(self):
            return 0.99                       # over CHECK_SHARE: no round drawn by chance
    chosen = tc.choose_rounds(16, NeverDraws(1))
    assert len(chosen) == tc.MIN_CHECKED_PER_BATCH and chosen <= set(range(16))


def test_the_checked_rounds_differ_from_batch_to_batch_and_cover_every_position():
    rng = random.Random(7)
    batches = [frozenset(tc.choose_rounds(16, rng)) for _ in range(200)]
    assert len(set(batches)) > 100              # no fixed schedule: a call counter predicts nothing
    assert set().union(*batches) == set(range(16))
    share = sum(len(b) for b in batches) / (200 * 16)
    assert 0.25 <= share < 0.3                  # an eighth drawn, topped up to four per batch


def test_a_short_batch_checks_what_it_has():
    assert tc.choose_rounds(1, random.Random(3)) == {0}
    assert tc.choose_rounds(0, random.Random(3)) == set()
    with pytest.raises(ValueError, match="rounds must be >= 0"):
        tc.choose_rounds(-1, random.Random(3))


def test_the_timer_draws_checks_from_os_urandom_not_from_its_seed():
    import inspect

    from gate.pipeline import gpu_timing
    assert "random.SystemRandom()" in inspect.getsource(gpu_timing.InterleavedTimer.__init__)
    assert isinstance(tc.TimedChecks.__init__.__defaults__[-1], type(None))   # default: SystemRandom


def test_a_graph_keeps_a_few_random_launches_fewer_for_large_outputs():
    kept = tc.kept_launches(64, 4, 4096, random.Random(1))
    assert len(kept) == tc.KEPT_PER_GRAPH and kept == sorted(set(kept)) and all(0 <= k < 64 for k in kept)
    assert kept != tc.kept_launches(64, 4, 4096, random.Random(2))     # drawn per graph, no fixed schedule
    big = 128 * 2**20                                                   # 1 GiB / 4 graphs: 2 outputs of 128 MiB
    assert len(tc.kept_launches(64, 4, big, random.Random(1))) == 2
    assert len(tc.kept_launches(64, 4, 2**40, random.Random(1))) == 1   # always one to check
    assert tc.kept_launches(3, 4, 4096, random.Random(1)) == [0, 1, 2]
    with pytest.raises(ValueError, match="at least one launch"):
        tc.kept_launches(0, 4, 1, random.Random(1))


def test_judge_scales_the_dtype_tolerance_and_fails_unwritten_elements():
    assert tc.judge(0.5, 100.0, 2e-2) == (True, 2.0)       # fp16, |ref| up to 100: 2.0 allowed
    assert tc.judge(3.0, 100.0, 2e-2)[0] is False           # a tile from another call's inputs
    assert tc.judge(0.01, 0.1, 2e-2) == (True, 2e-2)        # small outputs: scaled by at least 1
    assert tc.judge(math.inf, 100.0, 2e-2)[0] is False      # NaN/Inf read as +inf on the device
    assert tc.judge(math.nan, 100.0, 2e-2)[0] is False


def test_the_tally_counts_every_mismatch_and_names_the_first_few_in_call_order():
    tally = tc.CheckTally()
    tally.add("timed call 3", True, "")
    for i in (9, 17, 25, 33):
        tally.add(f"timed call {i}", False, "unwritten (NaN/Inf) output elements")
    assert (tally.checked, tally.mismatches) == (5, 4)
    assert tally.named == [f"timed call {i}: unwritten (NaN/Inf) output elements" for i in (9, 17, 25)]


def test_the_escape_odds_in_the_docstring_hold():
    rng = random.Random(11)
    per_batch = sum(len(tc.choose_rounds(16, rng)) for _ in range(2000)) / 2000
    assert 4.0 < per_batch < 4.5                       # ~4.2 of every 16 rounds
    checks = round(100 / 16 * per_batch)               # ~26 of ~100 timed calls
    assert (1 - 0.5) ** checks < 1e-7                  # skipping on half the calls: caught
    assert (1 - 0.25) ** checks < 1e-3
    assert 0.04 < (1 - 0.1) ** checks < 0.1            # 1 in 10: may escape, and moves no median
