"""Submitted code cannot move the timer (issue 25): the references are pinned before it is imported.

A fake torch stands in for the CUDA one (this machine has no GPU): events read a fake device clock
that advances 1 ms per record, through the C-level base class as torch's do. A fake extension module
then patches `torch.cuda.Event.elapsed_time` (to halve it) and `time.perf_counter` (to stand still)
when it is imported, as the extension of issue 25 did from its initialiser. The figures the timer
takes afterwards are unchanged, and `tampered` names both replacements.
"""

import importlib.util
import sys
import time
import types

import pytest

from gate.timing import all_streams, bench, gpu_timing, pinned, timed_checks  # noqa: F401  imported before the fake torch

PATCHING_EXTENSION = '''
import time
import torch

_real = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real(self, end) / 2   # halves both sides' figures
time.perf_counter = lambda: 0.0                                          # and the host's clock stands still
'''


def fake_torch():
    clock = {"ms": 0.0}

    class EventBase:                      # torch._C._CudaEventBase: a C type, not patchable
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self, stream):
            self.at = clock["ms"]
            clock["ms"] += 1.0

        def elapsed_time(self, end):
            return end.at - self.at

        def synchronize(self):
            pass

    class Event(EventBase):               # torch.cuda.Event: the Python wrappers
        def record(self, stream=None):
            super().record(stream)

        def elapsed_time(self, end):
            return super().elapsed_time(end)

    torch = types.ModuleType("torch")
    torch.Tensor = type("Tensor", (), {})
    torch._C = types.ModuleType("torch._C")
    torch._C._CudaEventBase = EventBase
    torch._C._cuda_synchronize = lambda: None
    torch.cuda = types.ModuleType("torch.cuda")
    torch.cuda.Event = Event
    torch.cuda.synchronize = lambda: torch._C._cuda_synchronize()
    torch.cuda.current_stream = lambda: "the caller's stream"
    torch.cuda.CUDAGraph = type("CUDAGraph", (), {"replay": lambda self: None})
    return torch


@pytest.fixture
def torch_here(monkeypatch):
    torch = fake_torch()
    for name, module in (("torch", torch), ("torch._C", torch._C), ("torch.cuda", torch.cuda)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(time, "perf_counter", time.perf_counter)   # restored after the patcher
    pinned.reset_for_tests()
    yield torch
    pinned.reset_for_tests()


def import_extension(tmp_path, source):
    path = tmp_path / "patching_ext.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("patching_ext", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_patching_initialiser_fails_to_move_the_figure_and_is_named(tmp_path, torch_here):
    pinned.pin()
    before = all_streams.all_streams_time(lambda i: None, 3, 4)
    import_extension(tmp_path, PATCHING_EXTENSION)
    assert torch_here.cuda.Event().elapsed_time is not None and time.perf_counter() == 0.0   # it did patch
    after = all_streams.all_streams_time(lambda i: None, 3, 4)
    # begin and end are one record apart on the fake clock: 1 ms over 4 calls, patched or not
    assert before.caller_stream_us == after.caller_stream_us == pytest.approx(250.0)
    assert after.per_call_us > 0                         # the pinned perf_counter still runs
    assert set(pinned.tampered()) == {"torch.cuda.Event.elapsed_time", "time.perf_counter"}


def test_an_untouched_timer_reports_nothing(torch_here):
    pinned.pin()
    all_streams.all_streams_time(lambda i: None, 3, 2)
    assert pinned.tampered() == []


def test_a_replaced_gate_function_is_named_too(torch_here, monkeypatch):
    pinned.pin()
    monkeypatch.setattr(all_streams, "all_streams_time", lambda *a: None)
    assert pinned.tampered() == ["gate.timing.all_streams.all_streams_time"]


def test_pinning_again_keeps_the_first_references(tmp_path, torch_here):
    pinned.pin()
    import_extension(tmp_path, PATCHING_EXTENSION)
    pinned.pin()                          # bench.time_revisions pins too: a no-op after the child did
    assert "torch.cuda.Event.elapsed_time" in pinned.tampered()
