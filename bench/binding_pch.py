"""How long does a cold binding compile take with and without the precompiled torch header, and how
long does making it take? On this machine, through the gate's own compile path.

    python3 bench/binding_pch.py [ROUNDS]

Each binding (the bench subject's `fma_binding.cpp`, FlashCore's `flashcore_binding.cpp`) is compiled
as the build compiles it (`build.compile_jobs`: the gate's exact command line, in the checkout) with
`objects.compile_object` into an empty object cache, `ROUNDS` times (default 1) with and without the
headers `gate pch` makes (`GATE_TORCH_PCH`, made first, into a fresh folder, and timed), the two
taking turns. It checks that both objects are the same bytes. Needs torch and a host compiler (no
GPU); a CPU torch lacks the CUDA headers these bindings include, so use a CUDA build of torch.
Table on stdout, JSON to $OUT/binding_pch.json when OUT is set.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gate.compiling import build, objects, toolchain as tc  # noqa: E402
from gate.compiling.build_cache import ObjectCache  # noqa: E402
from gate.compiling.torch_pch import Precompiled  # noqa: E402
from gate.compiling.torch_pch_make import make  # noqa: E402
from gate.domain import KernelSpec  # noqa: E402

BINDINGS = {"fma_binding": (ROOT / "bench" / "quality_repo", "extension/fma_binding.cpp", "fma_chain"),
            "flashcore_binding": (ROOT, "extension/flashcore_binding.cpp", "flashcore_wmma")}


def compile_once(tools: tc.Tools, repo: Path, source: str, name: str, pch: Precompiled | None,
                 work: Path) -> tuple[float, bytes, str]:
    spec = KernelSpec(name=name, sources=[source], arch=["sm_90"])
    (rel, command, key), = build.compile_jobs(spec, repo.resolve(), tools, None)
    cache = ObjectCache(Path(tempfile.mkdtemp(dir=work)))
    start = time.perf_counter()
    done = objects.compile_object(rel, command, key, repo.resolve(), Path(tempfile.mkdtemp(dir=work)), cache,
                                  900, pch)
    seconds = time.perf_counter() - start
    if not done.ok:
        raise SystemExit(f"{source} did not compile:\n{done.log[-3000:]}")
    return seconds, done.obj.read_bytes(), done.pch


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    tools = tc.discover(os.environ.get("GATE_NVCC_PATH", "nvcc"))
    headers = [h for h in os.environ.get("GATE_TORCH_PCH", "torch/extension.h").split(",") if h]
    work = Path(tempfile.mkdtemp(prefix="binding-pch-"))
    work.chmod(0o755)              # the box's user reads the headers and the checkouts through it
    made = make(work / "torch-pch", tools, headers)
    pch = Precompiled(work / "torch-pch", tools.versions)
    rows = {"torch": tools.versions.torch_version, "compiler": tools.versions.compiler_version.splitlines()[-2],
            "cores": os.cpu_count(), "make": {m.header: {"state": m.state, "seconds": round(m.seconds, 1)} for m in made}}
    for label, (repo, source, name) in BINDINGS.items():
        times: dict[str, list[float]] = {"without": [], "with": []}
        objects_made, notes = {}, set()
        for _ in range(rounds):
            for side, offered in (("without", None), ("with", pch)):
                seconds, obj, note = compile_once(tools, repo, source, name, offered, work)
                times[side].append(seconds)
                objects_made[side] = obj
                notes.add(note) if note else None
        rows[label] = {"without_s": round(statistics.median(times["without"]), 1),
                       "with_s": round(statistics.median(times["with"]), 1),
                       "same_object": objects_made["without"] == objects_made["with"], "note": sorted(notes)}
    print(f"torch {rows['torch']}, {rows['compiler']}, {rows['cores']} cores")
    for header, m in rows["make"].items():
        print(f"make {header}: {m['state']} in {m['seconds']} s")
    for label in BINDINGS:
        r = rows[label]
        print(f"{label}: {r['without_s']} s without, {r['with_s']} s with ({', '.join(r['note'])}); "
              f"same object: {r['same_object']}")
    if out := os.environ.get("OUT"):
        Path(out, "binding_pch.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
