"""The time of a side's calls on every stream of the device, beside its caller's stream's events.

A side that works on a private stream never joined to the caller's takes far longer per call on all
streams than on its caller's. Both figures come from one loop, so whatever that loop does to a call
(a warm L2, back-to-back write-backs, a host stall) counts on both sides: compared with its cold event
time instead, causal-conv1d's fp16 forward (52.5 µs cold, 68 µs per call in the loop on an H100) read
as hidden work. Why not CUPTI: docs/threat-model.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gate.timing import pinned


@dataclass(frozen=True)
class AllStreams:
    per_call_us: float        # wall time per call until every stream of the device had finished
    enqueue_us: float         # host time per call to enqueue it (what bounds a launch-bound loop)
    caller_stream_us: float   # the caller's stream per call over the same calls (events), idle gaps included


def all_streams_time(fn: Callable[[int], Any], input_sets: int, calls: int) -> AllStreams:
    """`calls` eager calls between two `cudaDeviceSynchronize` (every stream, private ones included),
    bracketed by events on the caller's stream (idle gaps included: a launch-bound loop reads the
    host's pace there too)."""
    pinned.synchronize()
    begin, end = pinned.new_event(), pinned.new_event()
    start = pinned.now()
    pinned.record(begin)
    for i in range(calls):
        fn(i % input_sets)
    pinned.record(end)
    enqueued = pinned.now()
    pinned.synchronize()
    done = pinned.now()
    return AllStreams((done - start) / calls * 1e6, (enqueued - start) / calls * 1e6,
                      pinned.elapsed_ms(begin, end) * 1e3 / calls)
