"""The toolchain is probed once per child process, even when both sides' static stages ask for it at
the same moment (they start together in `pipeline.run._static_sides`)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from gate.compiling import toolchain as tc


def test_two_sides_asking_at_once_share_one_probe(monkeypatch):
    probes: list[str] = []
    both_waiting = threading.Barrier(2)

    def probe(nvcc: str, facts_dir) -> str:
        probes.append(nvcc)
        time.sleep(0.2)                 # a probe takes a while (nvcc --dryrun, torch's import)
        return f"tools of {nvcc}"

    monkeypatch.setattr(tc, "_discovered", tc.cache(probe))

    def side(_: int) -> str:
        both_waiting.wait()
        return tc.discover("nvcc")

    with ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(side, range(2)))
    assert answers == ["tools of nvcc"] * 2 and probes == ["nvcc"]
