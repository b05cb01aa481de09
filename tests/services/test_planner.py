"""The planner's bounded workers: a full queue refuses at once, a failing task never stops a worker,
start-up's `feed` waits for room on its own thread, one host or repository holds no more than its
share of the workers, and a repository the gate mirrors never waits behind strangers."""

from __future__ import annotations

import threading
import time

import pytest

from gate.services.planner import Fetch, Planner
from tests.patience import HANG_S


@pytest.fixture
def planner():  # noqa: ANN201
    made = []

    def make(workers: int, queue_size: int) -> Planner:
        p = Planner(workers, queue_size)
        p.start()
        made.append(p)
        return p

    yield make
    for p in made:
        p.stop()


def test_a_full_queue_refuses_at_once_and_takes_again_once_there_is_room(planner):
    p = planner(1, 2)
    release, taken = threading.Event(), threading.Event()
    running = p.offer(lambda: taken.set() or release.wait(HANG_S), "holds the worker")
    assert taken.wait(HANG_S)                        # the worker has taken it: the queue is empty
    waiting = [p.offer(lambda: "ok", f"wait {i}") for i in range(2)]
    assert p.offer(lambda: "ok", "one too many") is None and not p.has_room()
    assert not running.done()          # refused, not blocked: it returned while the worker was still held
    release.set()
    assert running.result(5) is True and [f.result(5) for f in waiting] == ["ok", "ok"]
    assert p.offer(lambda: "again", "after").result(5) == "again"


def test_a_task_that_raises_leaves_its_worker_working(planner):
    p = planner(1, 4)
    failed = p.offer(lambda: 1 / 0, "raises")
    with pytest.raises(ZeroDivisionError):
        failed.result(5)
    assert p.offer(lambda: "still here", "next").result(5) == "still here"


def test_feed_queues_more_than_fits_without_blocking_its_caller(planner):
    p = planner(2, 1)
    done: list[int] = []
    go = threading.Event()
    feeder = p.feed([(lambda i=i: go.wait(HANG_S) and done.append(i), f"left {i}", Fetch()) for i in range(20)])
    assert done == []                  # it returned while every task still waited: it did not block
    go.set()
    feeder.join(HANG_S)
    deadline = time.monotonic() + HANG_S
    while len(done) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(done) == list(range(20))


def test_nonsense_sizes_are_refused_by_name():
    with pytest.raises(ValueError, match="GATE_PLANNER_WORKERS"):
        Planner(0, 4)


def _held(p: Planner, fetch: Fetch, release: threading.Event) -> object:
    return p.offer(lambda: release.wait(10), f"held {fetch}", fetch)


def test_one_host_holds_at_most_its_share_and_one_repository_one_worker(planner):
    p = planner(5, 64)                  # strangers may hold 4 workers: one is kept for known repositories
    release, running = threading.Event(), []
    silent = [Fetch(f"https://silent.example/r{i}", "silent.example") for i in range(5)]
    held = [_held(p, fetch, release) for fetch in silent]
    same = [_held(p, Fetch("https://a.example/x", "a.example"), release) for _ in range(2)]
    other = p.offer(lambda: running.append("other") or "done", "another host", Fetch("https://b.example/y", "b.example"))
    assert other.result(5) == "done"                        # two workers left over for other hosts
    assert sum(f.running() for f in held) == 2 and sum(f.running() for f in same) == 1
    release.set()
    assert all(f.result(5) for f in held + same)


def test_a_mirrored_repository_is_planned_while_strangers_hold_every_other_worker(planner):
    p = planner(4, 3)
    release = threading.Event()
    strangers = [_held(p, Fetch(f"https://h{i}.example/r", f"h{i}.example"), release) for i in range(3)]
    time.sleep(0.2)
    strangers += [_held(p, Fetch(f"https://h{i}.example/r", f"h{i}.example"), release) for i in range(3, 6)]
    time.sleep(0.2)
    assert sum(f.running() for f in strangers) == 3          # all workers but one; three wait
    assert p.offer(lambda: "x", "one stranger too many", Fetch("https://h9.example/r", "h9.example")) is None
    known = Fetch("/srv/repos/kernels", "", mirrored=True)
    assert p.has_room(known)
    started = time.monotonic()
    assert p.offer(lambda: "planned", "known", known).result(5) == "planned"
    assert time.monotonic() - started < 1
    release.set()
