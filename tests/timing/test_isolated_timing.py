"""Timing with the baseline in its own process (issue 26): a `remote_protocol.RemoteSide` in the rounds and
in the method choice. The remote side here is a fake that logs; the real one, over pipes to a real
process, is tests/timing/test_side_host.py."""

from collections import Counter

import pytest
from test_bench_method import CHAIN, JOINED, FakeTimer, prepare
from test_timed_checks import _Checks, _eager_timer

from gate.timing import pinned
from gate.timing.gpu_timing import SYNCHRONOUS_FLUSHES, Side
from gate.timing.remote_protocol import RemotePrepared
from gate.timing.timing_methods import GRAPH_LAUNCHES


class FakeRemote:
    """A remote side whose repetitions read 20 µs + the input set's index."""

    def __init__(self, log, us=20.0, topology=CHAIN, method="graph"):
        self.log, self.us, self.topology, self.method = log, us, topology, method

    def estimate_us(self, reps):
        return self.us

    def prepare(self, use_graph, launches, input_sets, keep_output_bytes):
        self.log.append(("remote prepare", use_graph, launches, input_sets, keep_output_bytes))
        if self.method != "graph":
            return RemotePrepared("events", 1, [], [], "operation not permitted when stream is capturing")
        return RemotePrepared("graph", launches, [launches] * 4, [CHAIN, self.topology])

    def replay_us(self, reps):
        return self.us

    def drop_graphs(self):
        self.log.append(("remote drop_graphs",))

    def repetition_us(self, set_index):
        self.log.append(("remote repetition", set_index))
        return self.us + set_index

    def refill(self, set_index):
        self.log.append(("remote refill", set_index))

    def reset_persisting_l2(self):
        self.log.append(("remote reset_l2",))
        return ""


class FakeBaseline:
    """The baseline's process: one `FakeRemote` per shape x dtype."""

    def __init__(self, remote):
        self.remote = remote

    def side_for(self, shape_index, dtype, input_sets):
        self.remote.log.append(("remote side_for", shape_index, dtype, input_sets))
        return self.remote

    def tampered(self):
        return []


def _isolated_rounds(monkeypatch, rounds=16):
    log = []
    timer = _eager_timer(monkeypatch, log)
    timer.synchronous = True          # as `bench.time_revisions` makes it beside a remote side
    monkeypatch.setattr(pinned, "synchronize", lambda: log.append(("sync",)))
    cand = Side("candidate", lambda i: log.append(("call", "candidate", i)) or f"out{i}", checks=_Checks(log))
    base = Side.of_remote("baseline", FakeRemote(log))
    peer = Side("cublas", lambda i: log.append(("call", "cublas", i)))
    timer.run_rounds([cand, base, peer], rounds, lambda i: log.append(("refill", i)), 3)
    return log, cand, base, peer


def test_with_a_remote_side_every_repetition_is_synchronous_and_drains_this_process_first(monkeypatch):
    log, cand, base, peer = _isolated_rounds(monkeypatch)
    assert len(cand.samples_us) == len(base.samples_us) == len(peer.samples_us) == 16
    for k in [k for k, e in enumerate(log) if e[0] == "call"]:
        back = k - 1      # sync, [poison], flush, hold, start, call, end, release, [check enqueued], wait
        while log[back][0] in ("poison", "flush", "record", "hold"):
            back -= 1
        assert log[back] == ("sync",)
        assert log[k - 2 - SYNCHRONOUS_FLUSHES:k - 2] == [("flush",)] * SYNCHRONOUS_FLUSHES
        assert log[k - 2][0] == "hold" and log[k - 1] == ("record",)
        following = [e[0] for e in log[k + 1:]]
        assert following[:2] == ["record", "release"] and following.index("wait") <= 3   # before anything else runs
    assert log.count(("sync",)) == 32          # before each local repetition (the remote's client syncs its own)
    assert sum(e == ("wait",) for e in log) == 32          # one per local repetition, none batched
    # the remote side's samples are what it measured, in its rounds' order
    sets = [e[1] for e in log if e[0] == "remote repetition"]
    assert base.samples_us == [20.0 + s for s in sets] and sets == [r % 3 for r in range(16)]


def test_with_a_remote_side_the_round_order_is_still_drawn_per_round(monkeypatch):
    log, *_ = _isolated_rounds(monkeypatch, rounds=48)
    positions, round_pos = Counter(), 0
    for entry in log:
        if entry[0] in ("call", "remote repetition"):
            if entry[0] == "remote repetition":
                positions[round_pos] += 1
            round_pos += 1
        elif entry[0] == "refill":
            round_pos = 0
    assert set(positions) == {0, 1, 2}          # the remote side ran first, second and last in some rounds


def test_a_remote_side_refills_its_own_set_after_each_round_and_resets_its_l2_per_batch(monkeypatch):
    log, *_ = _isolated_rounds(monkeypatch)
    local = [e[1] for e in log if e[0] == "refill"]
    remote = [e[1] for e in log if e[0] == "remote refill"]
    assert local == remote == [r % 3 for r in range(16)]
    assert all(log[k - 1][0] == "refill" for k, e in enumerate(log) if e[0] == "remote refill")
    assert log.count(("remote reset_l2",)) == 1


def test_without_a_remote_side_the_batch_is_enqueued_before_its_one_wait(monkeypatch):
    log = []
    timer = _eager_timer(monkeypatch, log)
    monkeypatch.setattr(pinned, "synchronize", lambda: log.append(("sync",)))
    sides = [Side("candidate", lambda i: None), Side("baseline", lambda i: None)]
    timer.run_rounds(sides, 16, lambda i: None, 3)
    assert ("sync",) not in log and log.count(("wait",)) == 1 and log[-1] == ("wait",)
    assert [len(s.samples_us) for s in sides] == [16, 16]


def test_a_remote_baseline_makes_its_own_inputs_and_is_asked_for_its_method_and_graph():
    log = []
    remote = FakeRemote(log, us=10.0)
    run, (labels, use_graph, _) = prepare(10.0, base_remote=FakeBaseline(remote))
    assert labels == ["candidate", "baseline", "cublas"] and use_graph
    assert run.method == "graph" and run.sides[1].remote is remote
    assert log[0] == ("remote side_for", 1, "float16", 3)       # the second shape of the kernel
    assert ("remote prepare", True, GRAPH_LAUNCHES, 3, 0) in log
    assert run.sides[1].launches == GRAPH_LAUNCHES and run.sides[1].work_nodes == [GRAPH_LAUNCHES] * 4


def test_a_remote_baseline_whose_graph_forks_refuses_the_graph_for_both_sides():
    log = []
    run, _ = prepare(10.0, base_remote=FakeBaseline(FakeRemote(log, us=10.0, topology=JOINED)))
    assert run.method == "events" and "the baseline's captured call forks" in run.method_note
    assert ("remote drop_graphs",) in log


def test_a_remote_capture_that_fails_times_every_side_with_events_and_says_where():
    log, timer = [], FakeTimer()
    run, _ = prepare(10.0, base_remote=FakeBaseline(FakeRemote(log, us=10.0, method="events")), timer=timer)
    assert run.method == "events"
    assert all(s.launches == 1 and not s.graphs for s in run.sides)
    assert timer.notes == ["CUDA graph capture failed in the baseline's process, timed with events: "
                           "operation not permitted when stream is capturing"]


def test_a_remote_side_has_no_call_in_this_process():
    side = Side.of_remote("baseline", FakeRemote([]))
    with pytest.raises(RuntimeError, match="a remote side has no call in this process"):
        side.fn(0)


def test_a_synchronous_timer_paces_local_sides_as_beside_a_remote_one(monkeypatch):
    log = []
    timer = _eager_timer(monkeypatch, log)
    timer.synchronous = True
    monkeypatch.setattr(pinned, "synchronize", lambda: log.append(("sync",)))
    cand = Side("candidate", lambda i: log.append(("call", i)))
    timer.run_rounds([cand], 16, lambda i: None, 3)
    assert log.count(("sync",)) == log.count(("wait",)) == 16 and len(cand.samples_us) == 16
    assert [e[0] for e in log[:11]] == (["sync"] + ["flush"] * SYNCHRONOUS_FLUSHES
                                        + ["hold", "record", "call", "record", "release", "wait"])
