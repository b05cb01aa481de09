"""Which timed calls are checked, and how a checked call is judged (issue 25). The torch side of
`TimedChecks` runs in tests/gpu/test_timed_integrity.py; here the choices and the judgement."""

import math
import random

import pytest

from gate.timing import timed_checks as tc


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

    from gate.timing import gpu_timing
    source = inspect.getsource(gpu_timing.InterleavedTimer)
    assert "self._check_rng = random.SystemRandom()" in source
    assert "choose_rounds(rounds, self._check_rng)" in source and "kept_launches(" in source


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


class _Event:
    count = 0

    def __init__(self):
        _Event.count += 1
        self.id = _Event.count


def _eager_timer(monkeypatch, log):
    """An InterleavedTimer without a GPU: events, flush and clock are fakes that write to `log`."""
    from gate.timing import gpu_timing, pinned

    monkeypatch.setattr(pinned, "new_event", _Event)
    monkeypatch.setattr(pinned, "record", lambda ev: log.append(("record",)))
    monkeypatch.setattr(pinned, "elapsed_ms", lambda a, b: 0.01)
    monkeypatch.setattr(pinned, "wait", lambda ev: log.append(("wait",)))
    monkeypatch.setattr(pinned, "now", lambda: 0.0)
    monkeypatch.setattr(gpu_timing, "reset_persisting_l2", lambda: "")
    timer = object.__new__(gpu_timing.InterleavedTimer)
    timer._rng, timer._check_rng, timer._next_set, timer.notes = random.Random(1), random.Random(2), 0, []
    timer.flush_l2 = lambda: log.append(("flush",))
    timer._hold = _FakeHold(log)
    return timer


class _FakeHold:
    """`gpu_hold.Hold` without a GPU: logs each hold and release; `gave_up` plays a hold that timed out."""

    def __init__(self, log):
        self.log, self.ticket, self.gave_up = log, 0, 0

    def hold(self):
        self.ticket += 1
        self.log.append(("hold", self.ticket))
        return self.ticket

    def release(self, ticket):
        self.log.append(("release", ticket))

    def timed_out(self):
        gave_up, self.gave_up = self.gave_up, 0
        return gave_up


class _Checks:
    def __init__(self, log):
        self.log, self.spent_s = log, 0.0

    def poison(self, set_index):
        self.log.append(("poison", set_index))

    def enqueue(self, call, out, set_index):
        self.log.append(("enqueue", call, out, set_index))

    def settle(self):
        self.log.append(("settle",))


def test_a_checked_call_is_poisoned_before_and_compared_after_its_timed_interval(monkeypatch):
    from gate.timing.gpu_timing import Side

    log = []
    timer = _eager_timer(monkeypatch, log)
    cand = Side("candidate", lambda i: log.append(("call", "candidate", i)) or f"out{i}", checks=_Checks(log))
    base = Side("baseline", lambda i: log.append(("call", "baseline", i)) or f"base{i}")
    timer.run_rounds([cand, base], 16, lambda i: log.append(("refill", i)), 3)
    enqueued = [k for k, e in enumerate(log) if e[0] == "enqueue"]
    assert len(enqueued) >= tc.MIN_CHECKED_PER_BATCH
    for k in enqueued:
        _, call, out, set_index = log[k]
        # poison, flush, hold, start event, the call, end event, release, then (outside the interval) the check
        ticket = log[k - 1][1]
        assert log[k - 7:k] == [("poison", set_index), ("flush",), ("hold", ticket), ("record",),
                                ("call", "candidate", set_index), ("record",), ("release", ticket)]
        assert out == f"out{set_index}" and call.startswith("timed call ")
    assert not any(e[0] == "poison" and log[k + 3][1:2] == ("baseline",) for k, e in enumerate(log))
    assert log.index(("settle",)) > log.index(("wait",))      # judged after the batch's one synchronisation
    assert len(cand.samples_us) == len(base.samples_us) == 16


def test_a_checked_graph_replay_poisons_and_checks_only_kept_launches_outside_the_interval(monkeypatch):
    from gate.timing.gpu_timing import Side

    log = []
    timer = _eager_timer(monkeypatch, log)

    class Graph:
        def __init__(self, g):
            self.g = g

        def replay(self):
            log.append(("replay", self.g))

    checks = _Checks(log)
    checks.poison_kept = lambda outs: log.append(("poison_kept", tuple(outs)))
    kept = [[(j, j % 3, f"g{g}l{j}") for j in (5, 17, 40)] for g in range(4)]
    cand = Side("candidate", lambda i: None, launches=64, graphs=[Graph(g) for g in range(4)], checks=checks, kept=kept)
    timer.run_rounds([cand], 16, lambda i: None, 3)
    replays = [k for k, e in enumerate(log) if e[0] == "replay"]
    checked = [k for k in replays if log[k - 4][0] == "poison_kept"]
    assert len(checked) >= tc.MIN_CHECKED_PER_BATCH
    for k in checked:
        poisoned = log[k - 4][1]
        assert len(poisoned) == tc.CHECKS_PER_REPLAY and set(poisoned) <= {o for _, _, o in kept[log[k][1]]}
        assert log[k - 3] == ("flush",) and log[k - 2][0] == "hold" and log[k - 1] == ("record",)
        assert log[k + 1] == ("record",) and log[k + 2] == ("release", log[k - 2][1])
        checks_after = [e for e in log[k + 3:k + 3 + tc.CHECKS_PER_REPLAY]]
        assert [e[2] for e in checks_after] == list(poisoned)                  # the very launches poisoned
        assert all(", launch " in e[1] and "of its graph replay" in e[1] for e in checks_after)


def test_the_checking_pass_checks_enough_calls_that_chance_cannot_hide_a_flaky_kernel():
    """Issue 43: wrong on 1 call in 32 at random, caught with probability >= 99 % per job; on 1 in 8,
    >= 99.9 %; however the job's calls divide into shapes."""
    assert tc.CHECKED_PER_JOB == 146
    for cases in (1, 2, 3, 7, 146, 200):
        n = tc.pass_calls(cases) * cases
        assert n >= 146 and (1 - 1 / 32) ** n <= 0.01 and (1 - 1 / 8) ** n <= 0.001
    assert tc.pass_calls(1) == 146 and tc.pass_calls(4) == 37 and tc.pass_calls(1000) == 1


def test_the_checking_pass_compares_every_call_with_its_input_sets_expected_output():
    """On the CPU, with an out-argument (poisoned in place, no CUDA needed): a function wrong on some
    calls is caught on each of them, named by its call; an honest one passes every call."""
    torch = pytest.importorskip("torch")
    sets = [{"a": torch.randn(64), "out": torch.empty(64)} for _ in range(3)]
    calls = []

    def fn(i):  # wrong (half the output unwritten) on every 8th call
        calls.append(i)
        out = sets[i]["out"]
        out[: 32 if len(calls) % 8 == 0 else 64] = sets[i]["a"][: 32 if len(calls) % 8 == 0 else 64] * 2
        return out

    checks = tc.TimedChecks(None, None, "float32", sets, 1e-5, reference=lambda shape, inputs: inputs["a"] * 2)
    checks.learn_output(sets[0]["out"])
    checks.check_pass(fn, 40)
    assert len(calls) == 40 and checks.tally.checked == 40 and checks.passed_calls == 40
    assert checks.tally.mismatches == 5 and "unwritten (NaN/Inf) output elements" in checks.tally.named[0]
    assert checks.evidence().startswith("5 of 40 call(s) checked in full (0 timed, 40 of the checking pass) wrong")
    honest = tc.TimedChecks(None, None, "float32", sets, 1e-5, reference=lambda shape, inputs: inputs["a"] * 2)
    honest.learn_output(sets[0]["out"])
    honest.check_pass(lambda i: torch.mul(sets[i]["a"], 2, out=sets[i]["out"]), 9)
    assert (honest.tally.checked, honest.tally.mismatches) == (9, 0)
