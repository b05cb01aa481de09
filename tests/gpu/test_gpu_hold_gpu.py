"""The hold on a real GPU: host time spent while a call is enqueued stays out of its events.

Two 2 ms host pauses inside the timed interval (after the start event is enqueued, before the call;
a stand-in for a slow host or a call with much host work): without the hold the events read the
pauses; with it they read the call alone. A call that waits for the GPU while enqueued (a
synchronisation between the start event and the call) makes the hold time out, which is reported.
"""

import time

import pytest

pytestmark = pytest.mark.gpu
PAUSE_S = 0.002



def _timed(torch, hold, sync_inside=False) -> float:
    a = torch.randn(512, 512, device="cuda")
    for _ in range(3):
        a @ a
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ticket = hold.hold() if hold else 0
    start.record()
    time.sleep(PAUSE_S)
    if sync_inside:
        torch.cuda.synchronize()
    a @ a
    time.sleep(PAUSE_S)
    end.record()
    if ticket:
        hold.release(ticket)
    end.synchronize()
    return start.elapsed_time(end) * 1e3


def test_host_pauses_inside_the_interval_are_not_timed_behind_a_hold(torch):
    from gate.timing.gpu_hold import Hold

    hold, why = Hold.create()
    assert hold is not None, why
    without = sorted(_timed(torch, None) for _ in range(5))[2]
    held = sorted(_timed(torch, hold) for _ in range(5))[2]
    print(f"\n512^2 fp32 matmul with two 2 ms host pauses in its interval: {without:.1f} µs without the hold, "
          f"{held:.1f} µs behind it")
    assert without > 2 * PAUSE_S * 1e6 * 0.9          # the pauses are in the interval
    assert held < 200.0                               # a ~10 µs matmul, not the 4 ms of pauses
    assert hold.timed_out() == 0


def test_a_call_that_waits_for_the_gpu_makes_the_hold_time_out_and_say_so(torch):
    from gate.timing.gpu_hold import TIMEOUT_NS, Hold

    hold, why = Hold.create()
    assert hold is not None, why
    began = time.perf_counter()
    _timed(torch, hold, sync_inside=True)
    waited = time.perf_counter() - began
    assert hold.timed_out() != 0
    assert TIMEOUT_NS * 1e-9 * 0.9 <= waited < 1.0
