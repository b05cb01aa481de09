"""What the all-streams check compares (`all_streams.all_streams_time`, `decide_rules.integrity_rows`),
on honest calls: one device call, under a minute.

    python3 bench/all_streams_loop.py        # table on stdout, JSON to $OUT/all_streams_loop.json

Per subject, three figures per call: the cold event median the bench would take (L2 flushed before
each call), the wall time per call of the check's eager loop until every stream has finished, and
the caller's stream over that same loop (events around it). The check used to compare the loop with
the cold event time, assuming a warm-L2 loop is never slower; causal-conv1d's fp16 forward on an
H100 read 52.5 µs cold and 68 µs in the loop and was rejected as hiding work. An honest call has
loop/caller-stream ≈ 1 whatever its loop/cold ratio; that ratio is what the check now holds to
1.25 x + 2 µs. Subjects are PyTorch's own kernels (nothing here can hide work): memory-bound ones
that move more than the L2 holds, a depthwise conv1d like causal-conv1d's, and a compute-bound GEMM.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate.timing.all_streams import all_streams_time  # noqa: E402
from gate.timing.bench import all_streams_calls  # noqa: E402
from gate.timing.gpu_timing import InterleavedTimer  # noqa: E402

LOOPS = 7                 # repeated loops per subject: the table shows each figure's median


def subjects():
    import torch
    import torch.nn.functional as F

    def tensor(*size, dtype=torch.float16):
        return torch.randn(*size, device="cuda", dtype=dtype)

    x, w, bias = tensor(4, 2048, 4096), tensor(2048, 1, 4), tensor(2048)
    big = tensor(64 * 2**20)
    a, b = tensor(2048, 2048), tensor(2048, 2048)
    return {
        "x * 2, 128 MB in + out (fp16)": lambda: big * 2,
        "x.clone(), 128 MB in + out": lambda: big.clone(),
        "depthwise conv1d b4 c2048 l4096 w4 (fp16)": lambda: F.conv1d(x, w, bias, padding=3, groups=2048)[..., :4096],
        "matmul 2048^3 (fp16, compute-bound)": lambda: a @ b,
    }


def main() -> int:
    import torch

    out = Path(os.environ.get("OUT", "."))
    timer = InterleavedTimer(seed=1)
    rows = []
    print(f"{'subject':<44} {'cold events':>12} {'loop, all streams':>18} {'loop, caller stream':>20} "
          f"{'all/caller':>10} {'all/cold':>9}")
    for name, fn in subjects().items():
        call = lambda _i, fn=fn: fn()  # noqa: E731
        cold = timer.estimate_us(call, reps=21)
        calls = all_streams_calls(cold)         # as many calls as the gate's own check makes
        loops = [all_streams_time(call, 1, calls) for _ in range(LOOPS)]
        every = statistics.median(x.per_call_us for x in loops)
        caller = statistics.median(x.caller_stream_us for x in loops)
        rows.append({"subject": name, "cold_us": cold, "calls": calls, "all_streams_us": every,
                     "caller_stream_us": caller, "loops": [vars(x) for x in loops]})
        print(f"{name:<44} {cold:10.1f} us {every:15.1f} us {caller:17.1f} us {every / caller:10.3f} "
              f"{every / cold:9.3f}", flush=True)
    report = {"device": torch.cuda.get_device_name(), "loops": LOOPS, "rows": rows}
    (out / "all_streams_loop.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
