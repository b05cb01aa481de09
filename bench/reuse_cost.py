"""What measurement reuse saves on the GPU (issue 29, point 2; docs/reuse.md), timed on the device.

A repository of ten kernels (the gate-quality FMA chain, `bench/quality_repo`, once per kernel;
k0..k3 include a shared header) goes through the real worker path (`run_claimed`: checkouts, the reuse
key, the boxed GPU child, the verdict, the history in SQLite):

1. warm-up: every kernel gated against its own revision, as a steady history has it;
2. a commit changes k7 only: the ten-kernel revision is timed, and then k7 alone, measured afresh
   (`remeasure`); the first must take at most 1.5x the second;
3. a commit touching no kernel (k7's first self-comparison is measured: whole pairs only);
4. a commit changes the shared header: exactly k0..k3 must be measured.

Prints both times, their ratio and which kernels each revision measured; writes $OUT/reuse_cost.json.
The object cache is filled first (every extension built once, in parallel), so that the timed revisions compare gating, not the
first compile of ten torch bindings. Run: python3 bench/reuse_cost.py (about 6 minutes on an H100).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import select  # noqa: E402

from gate.compiling import build  # noqa: E402
from gate.config import get_settings  # noqa: E402
from gate.executors.base import JobEnvironment, run_claimed  # noqa: E402
from gate.executors.job import gate_job  # noqa: E402
from gate.manifest.load import load_manifest  # noqa: E402
from gate.sources.mirror import Mirror  # noqa: E402
from gate.storage import claims  # noqa: E402
from gate.storage.db import make_engine, make_session_factory  # noqa: E402
from gate.storage.models import Job, Repository, Revision  # noqa: E402
from gate.storage.schema import upgrade  # noqa: E402
from gate.storage.unit import Store  # noqa: E402

SUBJECT = Path(__file__).resolve().parent / "quality_repo"
KERNELS = [f"k{i}" for i in range(10)]
SHARED = ["k0", "k1", "k2", "k3"]
LIMIT_RATIO = 1.5
ENTRY = """[[kernel]]
name = "{name}"
sources = ["kernels/{name}.cu", "extension/fma_binding.cpp"]
workload = "quality_workload:make"
arch = ["sm_90"]
shapes = [{{n = 1048576, iters = 2000}}]
dtypes = ["float32"]

[kernel.gates]
max_latency_regression_pct = 10
max_error_ratio = 16.0

"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def kernel_source(name: str, extra_pct: int = 0) -> str:
    text = (SUBJECT / "kernels" / "fma_chain.cu").read_text()
    text = text.replace("#define GATE_EXTRA_PCT 0", f"#define GATE_EXTRA_PCT {extra_pct}")
    return ('#include "common.cuh"\n' if name in SHARED else "") + text


def make_repository(work: Path) -> tuple[Path, str]:
    repo = work / "ten"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    files = {"gate.toml": "".join(ENTRY.format(name=k) for k in KERNELS),
             "common.cuh": "// shared by k0..k3\n#define CHAIN_NOTE 0\n", "README.md": "ten kernels\n",
             "quality_workload.py": (SUBJECT / "quality_workload.py").read_text(),
             "extension/fma_binding.cpp": (SUBJECT / "extension" / "fma_binding.cpp").read_text()}
    files.update({f"kernels/{k}.cu": kernel_source(k) for k in KERNELS})
    return repo, commit(repo, files, "ten kernels")


def fill_object_cache(repo: Path, cache: Path, options) -> None:  # noqa: ANN001
    """Build every kernel's extension once, four at a time, into the jobs' object cache: the binding
    is compiled per kernel (its module name differs), ~45 s of torch headers each."""
    specs = load_manifest(repo).kernels
    with ThreadPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(lambda k: build.build_extension(k, repo, cache, repo.parent / "prebuilt" / k.name,
                                                             nvcc=options.nvcc_path), specs))
    failed = [(k.name, r.reason) for k, r in zip(specs, done) if r.status.value != "passed"]
    if failed:
        raise SystemExit(f"build failed: {failed}")


class Worker:
    def __init__(self, work: Path, repo: Path, options) -> None:  # noqa: ANN001
        engine = make_engine(f"sqlite:///{work / 'gate.db'}")
        upgrade(engine)
        self.session_factory = make_session_factory(engine)
        self.env = JobEnvironment(store=Store(engine), gate_job=gate_job,
                                  data_dir=work / "data", options=options, mirror=Mirror(work / "mirrors"))
        with self.session_factory() as s:
            row = Repository(name="ten", url=str(repo))
            s.add(row)
            s.commit()
            self.repository_id = row.id

    def gate(self, sha: str, base_sha: str, kernels: list[str], remeasure: bool = False) -> dict:
        """Gate `kernels` of `sha` one job after another, as one worker does; seconds, verdicts, and
        the kernels whose job measured (no earlier job's figures)."""
        with self.session_factory() as s:
            rev = Revision(repository_id=self.repository_id, sha=sha, base_sha=base_sha, remeasure=remeasure,
                           jobs=[Job(kernel=k) for k in kernels])
            s.add(rev)
            s.commit()
            ids = [j.id for j in rev.jobs]
        started = time.monotonic()
        for job_id in ids:
            with self.session_factory() as s:
                attempt = claims.Claims(s).claim(job_id, worker="bench")
            run_claimed(self.env, job_id, attempt)
        seconds = time.monotonic() - started
        with self.session_factory() as s:
            jobs = s.scalars(select(Job).where(Job.id.in_(ids)).order_by(Job.id)).all()
            verdicts = {j.kernel: (j.verdict.verdict if j.verdict else j.state) + (f" ({j.error})" if j.error else "")
                        for j in jobs}
            measured = [j.kernel for j in jobs if j.reused_from_job_id is None]
        return {"seconds": round(seconds, 1), "measured": measured, "verdicts": verdicts}


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="reuse-cost-"))
    work.chmod(0o755)     # mkdtemp's 0700 would shut the box's user out, as a data folder never does
    options = replace(get_settings().run_options(), build_cache_dir=str(work / "build-cache"))
    repo, root = make_repository(work)
    report: dict = {"bench_budget_s": options.bench_budget_s}
    t0 = time.monotonic()
    fill_object_cache(repo, Path(options.build_cache_dir), options)
    report["object_cache_s"] = round(time.monotonic() - t0, 1)
    worker = Worker(work, repo, options)

    def step(name: str, *args, **kwargs) -> dict:  # noqa: ANN002, ANN003
        report[name] = worker.gate(*args, **kwargs)
        print(f"{name:<14} {report[name]['seconds']:7.1f} s  measured {report[name]['measured']}  "
              f"verdicts {sorted(set(report[name]['verdicts'].values()))}", flush=True)
        return report[name]

    step("warm-up", root, root, KERNELS)
    one_change = commit(repo, {"kernels/k7.cu": kernel_source("k7", extra_pct=5)}, "k7: 5 % more FMAs")
    ten = step("ten-kernels", one_change, root, KERNELS)
    alone = step("k7-alone", one_change, root, ["k7"], remeasure=True)
    quiet = commit(repo, {"README.md": "ten kernels, documented\n"}, "docs")
    step("quiet-commit", quiet, one_change, KERNELS)
    header = commit(repo, {"common.cuh": "// shared by k0..k3\n#define CHAIN_NOTE 1\n"}, "shared header")
    shared = step("shared-header", header, quiet, KERNELS)
    ratio = ten["seconds"] / alone["seconds"] if alone["seconds"] else float("inf")
    report["ratio"] = round(ratio, 2)
    report["ok"] = {"ten_within_1.5x": ratio <= LIMIT_RATIO, "one_change_measures_k7_only": ten["measured"] == ["k7"],
                    "header_measures_its_includers_only": shared["measured"] == SHARED}
    print("\n== reuse cost")
    print(f"ten-kernel revision, one kernel changed: {ten['seconds']:.1f} s (measured {ten['measured']})")
    print(f"that kernel alone, measured afresh:      {alone['seconds']:.1f} s")
    print(f"ratio {ratio:.2f} (limit {LIMIT_RATIO}); shared header measured {shared['measured']} "
          f"(expected {SHARED})")
    print("checks:", json.dumps(report["ok"]))
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    (out / "reuse_cost.json").write_text(json.dumps(report, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(report["ok"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
