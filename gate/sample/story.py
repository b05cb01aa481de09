"""The story the synthetic history tells, one event per commit (SYNTHETIC SAMPLE DATA).

One `ldmatrix` step in the middle (the change point), a handful of regressions, rare others.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

MESSAGES = [
    "Unroll the inner KV loop by two", "Keep the running max in registers across tiles",
    "Use exp2f with a pre-scaled softmax", "Vectorise Q loads to 128-bit", "Tidy launch bounds",
    "Swap the order of the rescale and the PV product", "Move the causal mask out of the hot loop",
    "Pad the shared-memory row stride", "Hoist the 1/sqrt(d) scale into Q", "Split the epilogue",
    "Reuse the P tile buffer for the output accumulator", "Fuse the final normalisation",
]
AUTHORS = ["Ada Okafor", "Lin Wei", "Mei Tanaka", "Sam Rivera"]


@dataclass(frozen=True)
class StoryEvent:
    kind: str          # normal | ldmatrix | regress | conflicts | inconclusive | noprofile
    target: str        # the kernel the commit changes ("" = none in particular)
    message: str
    author: str


def revision_story(n: int, rng: random.Random) -> list[StoryEvent]:
    """Commit events: one ldmatrix step at the middle, a handful of regressions, rare others."""
    special = {n // 2: ("ldmatrix", "flashcore_wmma",
                        "Load K/V tiles with ldmatrix.x4 and a swizzled shared-memory layout"),
               int(n * 0.28): ("inconclusive", "flashcore_wmma", "Reorder the softmax reductions"),
               int(n * 0.75): ("conflicts", "flashcore_wmma",
                               "Store O through shared memory without the padding"),
               int(n * 0.92): ("noprofile", "flashcore_wmma", "Bump the profiler container")}
    for frac, target in ((0.2, "flashcore_wmma"), (0.37, "gemm_tiled"), (0.62, "flashcore_wmma"),
                         (0.85, "flashcore_scalar")):
        special.setdefault(int(n * frac), ("regress", target, "Try 4 warps per block instead of 8"))
    events = []
    for i in range(n):
        author = AUTHORS[rng.randrange(len(AUTHORS))]
        if i in special:
            kind, target, message = special[i]
        elif n > 200 and rng.random() < 0.03:
            kind, target, message = "regress", "flashcore_wmma", "Experiment: larger Br tile"
        else:
            kind, target, message = "normal", "", MESSAGES[rng.randrange(len(MESSAGES))]
        events.append(StoryEvent(kind, target, message, author))
    return events
