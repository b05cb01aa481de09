"""How long a test may wait for something before it calls it a hang, and how a test bounds a time.

A test that must see something happen waits for the event itself (a line printed, a file written, a
server answering, a process gone), never for a fixed time; `HANG_S` only stops a wait that would
never end. It is not a speed check: a wait returns as soon as its event happens, and a wait on a
process also ends once that process has died. It only has to exceed the slowest event on a 2-core
machine with another suite running beside (a server took over 60 s to start there).

A test that checks that something is quick compares it with a baseline measured in the same test on
the same machine at the same time (`within`), so that a busy machine slows both sides alike.
"""

from __future__ import annotations

HANG_S = 600.0


def within(took_s: float, baseline_s: float, factor: float) -> bool:
    """Whether `took_s` is at most `factor` times `baseline_s`, the time the same test measured for
    what the checked thing must not be slower than."""
    return took_s <= factor * baseline_s
