"""The hold (`gpu_hold`): every timed repetition's events bracket work already in the GPU's queue.

The ordering is checked against the timer with fakes for events and the hold; the PTX against the
toolkit's own assembler (the driver JIT-compiles the same text on the GPU machine); the GPU itself is
exercised by tests/gpu/test_timed_integrity.py (the fork-join job) and bench/gate_quality.py.
"""

import shutil
import subprocess

import pytest

from gate.timing import gpu_hold
from gate.timing.gpu_timing import Side
from tests.timing.test_timed_checks import _eager_timer


def _order(log, label):
    """Per repetition of `label`: the log entries from its flush to the entry after its call."""
    calls = [k for k, e in enumerate(log) if e[:2] == ("call", label)]
    return [log[k - 3:k + 3] for k in calls]


def test_every_repetition_waits_behind_a_hold_released_after_its_end_event(monkeypatch):
    log = []
    timer = _eager_timer(monkeypatch, log)
    sides = [Side(name, lambda i, name=name: log.append(("call", name, i))) for name in ("candidate", "baseline", "peer")]
    timer.run_rounds(sides, 16, lambda i: None, 3)
    for side in sides:
        reps = _order(log, side.label)
        assert len(reps) == 16
        for flush, hold, start, call, end, release in reps:
            assert flush == ("flush",) and hold[0] == "hold" and start == end == ("record",)
            assert release == ("release", hold[1])      # the GPU passes the hold only once the end is queued
    tickets = [e[1] for e in log if e[0] == "hold"]
    assert tickets == sorted(set(tickets))              # one ticket per repetition, in order


def test_a_side_whose_hold_gave_up_is_timed_without_it_and_the_notes_say_so(monkeypatch):
    log = []
    timer = _eager_timer(monkeypatch, log)
    hold = timer._hold

    def waits_for_the_gpu(i):         # its hold (the ticket just issued) times out in this batch
        hold.gave_up = hold.gave_up or hold.ticket
        log.append(("call", "baseline", i))

    cand = Side("candidate", lambda i: log.append(("call", "candidate", i)))
    base = Side("baseline", waits_for_the_gpu)
    timer.run_rounds([cand, base], 4, lambda i: None, 3)   # judged after this batch's synchronisation
    base.fn = lambda i: log.append(("call", "baseline", i))
    log.clear()
    timer.run_rounds([cand, base], 4, lambda i: None, 3)
    assert not base.held and cand.held
    assert all(rep[1][0] == "hold" for rep in _order(log, "candidate"))
    base_calls = [k for k, e in enumerate(log) if e[:2] == ("call", "baseline")]
    assert all(log[k - 2] == ("flush",) and log[k - 1] == ("record",) for k in base_calls)
    assert any("the baseline's call waits for the GPU while it is enqueued" in n for n in timer.notes)


def test_without_a_driver_there_is_no_hold_and_the_reason_is_given(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr(gpu_hold, "driver", lambda: None)
    hold, why = gpu_hold.Hold.create()
    assert hold is None and why == "libcuda not loadable"


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas (CUDA toolkit) on this machine")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_hold_kernel_assembles_for_the_gpus_the_gate_supports(tmp_path, arch):
    ptx = tmp_path / "hold.ptx"
    ptx.write_bytes(gpu_hold.PTX.rstrip(b"\x00"))
    proc = subprocess.run(["ptxas", f"-arch={arch}", str(ptx), "-o", str(tmp_path / "hold.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "hold.cubin").stat().st_size > 0


def test_each_launch_reads_the_next_ticket_and_the_same_words():
    """The argument block is made once; a launch reads the ticket set just before it."""
    import ctypes

    seen = []

    class Driver:
        def cuLaunchKernel(self, _fn, *args):          # noqa: N802  the driver's name
            params = args[-2]
            seen.append((ctypes.cast(params[0], ctypes.POINTER(ctypes.c_uint64))[0],
                         ctypes.cast(params[1], ctypes.POINTER(ctypes.c_uint32))[0],
                         ctypes.cast(params[2], ctypes.POINTER(ctypes.c_uint64))[0],
                         ctypes.cast(params[3], ctypes.POINTER(ctypes.c_uint64))[0]))
            return 0

    class Words:
        buf = (ctypes.c_uint32 * 2)()

        def data_ptr(self):
            return ctypes.addressof(self.buf)

    class Stream:
        cuda_stream = 0

    hold = gpu_hold.Hold(Driver(), None, Words(), 4096, Stream)
    assert [hold.hold(), hold.hold()] == [1, 2]
    assert seen == [(4096, 1, gpu_hold.TIMEOUT_NS, 4100), (4096, 2, gpu_hold.TIMEOUT_NS, 4100)]
    hold.release(2)
    assert Words.buf[0] == 2
