"""Every GPU of a host, one job each (issue 42). On a machine with several GPUs:

    python3 bench/fleet.py [one] [two] [all] [aa] [celery]   (default: one two all; JSON to $OUT/fleet-*.json)

The subject is bench/quality_repo's FMA chain in a git repository: a baseline commit and 8 revisions
made from it, 4 honest (a notes-only commit, a comment in the kernel and one in the binding, an
unused macro), 3 regressions (GATE_EXTRA_PCT +5, +10, +20 %: more arithmetic, the same memory
traffic) and one that writes the wrong output.

- one, two, all: `gate serve` (embedded executor, SQLite, the box on, a fresh data folder: nothing
  reused) with one GPU, the first two, and every GPU (CUDA_VISIBLE_DEVICES); the 8 revisions
  submitted at once against the baseline; per job its GPU, verdict, deciding rule and wall time, the
  batch's time from the first submission to the last verdict, and each batch's time over one GPU's.
  The batches share one object cache (GATE_BUILD_CACHE_DIR), filled first by `gate run` of the
  baseline, so that they compare GPUs at work, not who paid the first compile;
- aa: bench/gate_quality.py's `aa` and `det` sections on GPU 0 alone (CUDA_VISIBLE_DEVICES) while
  `gate serve` on the other GPUs gates the batch again and again (every job measured: no reuse):
  false alarms, the A/A bias and the +3 % detections beside busy neighbours;
- celery: the batch through a Redis broker (`redis-server` from PATH, on a free port) with one
  `gate worker --gpu N` (GATE_EXECUTOR=celery) per GPU: per job the worker, its GPU and its verdicts.

Settings the jobs take from the environment: GATE_BENCH_BUDGET_S (default here 2), GATE_TORCH_PCH
(default here off, so that both batches start alike). FLEET_GPUS (indices, e.g. `0,1,2`) keeps the
script to those GPUs: another part may use the rest meanwhile. A table last.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import httpx  # noqa: E402

from gate.nvidia.devices import Gpu, list_gpus  # noqa: E402
from gate_quality import LARGE, SUBJECT, _git, subject_manifest  # noqa: E402

CU, BINDING = Path("kernels/fma_chain.cu"), Path("extension/fma_binding.cpp")
LATENCY, CORRECTNESS = "max_latency_regression_pct", "correctness"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"{path}: {old!r} not found: the subject changed")
    path.write_text(text.replace(old, new, 1))


# label, commit message, the edit, the expected (verdict, deciding rule)
VARIANTS: tuple[tuple[str, str, Callable[[Path], None], tuple[str, str]], ...] = (
    ("notes", "notes only", lambda r: (r / "NOTES.md").write_text("no source changed\n"), ("accept", "")),
    ("comment", "a comment in the kernel", lambda r: _edit(r / CU, "#include", "// fleet\n#include"), ("accept", "")),
    ("binding", "a comment in the binding", lambda r: _edit(r / BINDING, "#include", "// fleet\n#include"),
     ("accept", "")),
    ("macro", "an unused macro", lambda r: _edit(r / CU, "#include", "#define FLEET_UNUSED 1\n#include"),
     ("accept", "")),
    *((f"+{pct} %", f"+{pct} % arithmetic",
       lambda r, pct=pct: _edit(r / CU, "#define GATE_EXTRA_PCT 0", f"#define GATE_EXTRA_PCT {pct}"),
       ("reject", LATENCY)) for pct in (5, 10, 20)),
    ("wrong", "wrong output", lambda r: _edit(r / CU, "y[i] = v;", "y[i] = v * 1.01f;"), ("reject", CORRECTNESS)),
)


def subject_repo(work: Path) -> tuple[Path, str, dict[str, str]]:
    """The repository: its baseline commit, and each variant's commit made from it."""
    repo = work / "fleet-repo"
    shutil.copytree(SUBJECT, repo)
    (repo / "gate.toml").write_text(subject_manifest([LARGE]))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "baseline")
    base = _git(repo, "rev-parse", "HEAD")
    shas = {}
    for label, message, edit, _ in VARIANTS:
        _git(repo, "checkout", "-q", "--detach", base)
        edit(repo)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", message)
        shas[label] = _git(repo, "rev-parse", "HEAD")
    return repo, base, shas


class Service:
    """`gate serve` (or a `gate worker`) in a data folder of its own, logging to a file there."""

    def __init__(self, data: Path, args: list[str], **settings: str):
        data.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "GATE_DATA_DIR": str(data), "GATE_ALLOW_LOCAL_REPOS": "1",
               "GATE_BENCH_BUDGET_S": os.environ.get("GATE_BENCH_BUDGET_S", "2"),
               "GATE_TORCH_PCH": os.environ.get("GATE_TORCH_PCH", "off"), **settings}
        env.pop("GATE_API_TOKEN", None)
        argv = [*args, "--port", str(self.port)] if args[0] == "serve" else args
        self.log = data / f"{args[0]}-{self.port}.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "gate.cli", *argv], env=env, stdout=log,
                                         stderr=subprocess.STDOUT)

    def wait_up(self, timeout_s: float = 120) -> Service:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"gate exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise SystemExit(f"gate did not answer in {timeout_s:.0f} s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def submit_all(url: str, repo: Path, base: str, shas: dict[str, str], force: bool = False) -> dict[str, str]:
    """Each variant submitted against the baseline, one after another as fast as the API answers:
    label -> its status URL."""
    urls = {}
    for label, sha in shas.items():
        reply = httpx.post(f"{url}/api/v1/revisions", json={"repo": str(repo), "sha": sha, "base_sha": base,
                                                             "force": force}, timeout=60)
        reply.raise_for_status()
        urls[label] = reply.json()["status_url"]
    return urls


def wait_done(urls: dict[str, str], timeout_s: float) -> dict[str, dict]:
    """Each revision's JSON once it is done."""
    done: dict[str, dict] = {}
    deadline = time.monotonic() + timeout_s
    while len(done) < len(urls):
        if time.monotonic() > deadline:
            raise SystemExit(f"not done in {timeout_s:.0f} s: {sorted(set(urls) - set(done))}")
        for label, url in urls.items():
            if label not in done and (body := httpx.get(url, timeout=30).json())["status"] in ("done", "cancelled"):
                done[label] = body
        time.sleep(1.0)
    return done


def job_row(label: str, body: dict, verdicts: dict[int, int]) -> dict:
    """One revision's job as the table shows it."""
    (job,) = body["jobs"]
    verdict = job["verdict"] or {}
    rule = next((r["rule"] for r in verdict.get("rules", []) if r.get("decisive")), "")
    started, finished = (datetime.fromisoformat(job[k]) if job[k] else None for k in ("started_at", "finished_at"))
    expected = next(v[3] for v in VARIANTS if v[0] == label)
    return {"label": label, "gpu": job["gpu_index"], "uuid": job["gpu_uuid"], "worker": job["worker"],
            "verdict": verdict.get("verdict", job["state"]), "rule": rule, "reason": verdict.get("reason", ""),
            "wall_s": (finished - started).total_seconds() if started and finished else None,
            "attempts": job["attempts"], "verdicts": verdicts.get(job["id"], 0),
            "expected": f"{expected[0]} {expected[1]}".strip(),
            # An accept names its closest rule as decisive; only a reject's deciding rule is part of the claim.
            "as_expected": verdict.get("verdict") == expected[0] and expected[0] == "accept" or (
                verdict.get("verdict"), rule) == expected}


def stored_verdicts(data: Path) -> dict[int, int]:
    """Verdict rows per job in the SQLite database of `data` (the schema allows one)."""
    with sqlite3.connect(data / "gate.db") as db:
        return dict(db.execute("SELECT job_id, count(*) FROM verdicts GROUP BY job_id").fetchall())


def batch(work: Path, name: str, repo: Path, base: str, shas: dict[str, str], gpus: list[Gpu],
          timeout_s: float = 540, **settings: str) -> dict:
    """The 8 revisions at once on a `gate serve` with `gpus` (a fresh data folder): per job and in all."""
    data = work / f"data-{name}"
    visible = ",".join(g.uuid for g in gpus)
    server = Service(data, ["serve"], CUDA_VISIBLE_DEVICES=visible, GATE_BUILD_CACHE_DIR=str(work / "objects"),
                     **settings).wait_up()
    try:
        started = time.monotonic()
        bodies = wait_done(submit_all(server.url, repo, base, shas), timeout_s)
        batch_s = time.monotonic() - started
    finally:
        server.stop()
    verdicts = stored_verdicts(data)
    rows = [job_row(label, bodies[label], verdicts) for label in shas]
    return {"name": name, "gpus": [g.index for g in gpus], "batch_s": batch_s, "jobs": rows,
            "gpus_used": sorted({r["gpu"] for r in rows if r["gpu"] is not None})}


def warm_objects(work: Path, repo: Path, base: str, binding: str, gpu: Gpu) -> float:
    """The baseline, then the binding's revision (the one costly compile of the batch), gated once each by
    `gate run` into the batches' object cache, so that no section pays a compile another found cached; seconds."""
    started = time.monotonic()
    env = {**os.environ, "GATE_DATA_DIR": str(work / "data-warm"), "GATE_BUILD_CACHE_DIR": str(work / "objects"),
           "GATE_BENCH_BUDGET_S": "1", "GATE_TORCH_PCH": os.environ.get("GATE_TORCH_PCH", "off"),
           "CUDA_VISIBLE_DEVICES": gpu.uuid}
    for sha, against in ((base, []), (binding, ["--base", base])):
        subprocess.run([sys.executable, "-m", "gate.cli", "run", "--repo", str(repo), "--sha", sha, *against],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=600)
    return time.monotonic() - started


def celery_batch(work: Path, repo: Path, base: str, shas: dict[str, str], gpus: list[Gpu]) -> dict:
    """The batch through Redis and one Celery worker per GPU (`gate worker --gpu N`)."""
    data = work / "data-celery"
    data.mkdir(parents=True)
    port = _free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    settings = {"GATE_EXECUTOR": "celery", "GATE_BROKER_URL": f"redis://127.0.0.1:{port}/0",
                "GATE_DATABASE_URL": f"sqlite:///{data / 'gate.db'}"}
    services = [Service(data, ["serve"], **settings)]
    try:
        services[0].wait_up()
        services += [Service(data, ["worker", "--gpu", str(g.index)], **settings) for g in gpus]
        started = time.monotonic()
        bodies = wait_done(submit_all(services[0].url, repo, base, shas), 540)
        batch_s = time.monotonic() - started
    finally:
        for service in reversed(services):
            service.stop()
        redis.terminate()
        redis.wait()
    verdicts = stored_verdicts(data)
    rows = [job_row(label, bodies[label], verdicts) for label in shas]
    return {"name": "celery", "gpus": [g.index for g in gpus], "batch_s": batch_s, "jobs": rows,
            "gpus_used": sorted({r["gpu"] for r in rows if r["gpu"] is not None})}


def aa(work: Path, repo: Path, base: str, shas: dict[str, str], gpus: list[Gpu], out: Path,
       quality: list[str] | None = None) -> dict:
    """The A/A and +3 % trials (gate_quality's `aa det`) on GPU 0 while the other GPUs gate the batch
    in a loop."""
    if len(gpus) < 2:
        raise SystemExit("aa needs two GPUs at least: GPU 0 for the trials, the others busy beside it")
    data = work / "data-neighbours"
    server = Service(data, ["serve"], CUDA_VISIBLE_DEVICES=",".join(g.uuid for g in gpus[1:]),
                     GATE_REUSE_MAX_AGE_H="0").wait_up()
    stop, rounds = threading.Event(), []

    def neighbours() -> None:
        while not stop.is_set():
            try:
                done = wait_done(submit_all(server.url, repo, base, shas, force=True), 900)
            except (httpx.HTTPError, SystemExit):      # the server stopped under it (the count says how far it got)
                return
            rounds.append(sum(len(b["jobs"]) for b in done.values()))

    loop = threading.Thread(target=neighbours, daemon=True)
    loop.start()
    try:
        command = quality or [sys.executable, str(ROOT / "bench" / "gate_quality.py"), "aa", "det"]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpus[0].uuid, "OUT": str(out)}
        subprocess.run(command, env=env, check=True, timeout=900)
    finally:
        stop.set()
        server.stop()
    report = json.loads((out / "gate_quality-aa-det.json").read_text())
    with sqlite3.connect(data / "gate.db") as db:
        beside = db.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0]
    return {"device": report.get("device", ""), "trials": report.get("trials"), "neighbour_jobs": beside,
            "neighbour_rounds": len(rounds), **{k: _trials(report[k]) for k in
                                                ("aa_large", "aa_small", "det3_large", "det3_small") if k in report}}


def _trials(section: dict) -> dict:
    found = {"regressions_1pct": section["regressions"]["1.0"], "median_us": section["median_us"],
             "median_ratio": section["median_ratio"]}
    return {**found, "bias": section["bias"]} if "bias" in section else found


def table(results: dict) -> None:
    print("\n== fleet: one job per GPU")
    for name in ("one", "two", "all", "celery"):
        if name not in results:
            continue
        r = results[name]
        print(f"{name}: GPUs {r['gpus']} (used {r['gpus_used']}), batch {r['batch_s']:.1f} s")
        print(f"  {'revision':<9} {'GPU':>3} {'worker':<28} {'verdict':<8} {'rule':<28} {'wall s':>7} verdicts ok")
        for j in r["jobs"]:
            wall = f"{j['wall_s']:.1f}" if j["wall_s"] is not None else "-"
            print(f"  {j['label']:<9} {j['gpu'] if j['gpu'] is not None else '-':>3} {(j['worker'] or '-')[-28:]:<28} "
                  f"{j['verdict']:<8} {j['rule'] or '-':<28} {wall:>7} {j['verdicts']:>8} "
                  f"{'yes' if j['as_expected'] else 'NO'}")
    for name in ("two", "all", "celery"):
        if name in results and "one" in results:
            r = results[name]
            print(f"{name}: batch on {len(r['gpus'])} GPUs / on one: {r['batch_s'] / results['one']['batch_s']:.2f}")
    if "aa" in results:
        a = results["aa"]
        print(f"aa on GPU 0 beside {a['neighbour_jobs']} neighbour jobs ({a['neighbour_rounds']} whole batches):")
        for key in ("aa_large", "aa_small", "det3_large", "det3_small"):
            if key in a:
                v = a[key]
                b = v.get("bias")
                bias = f"  bias mean {b['mean_shift_pct']:+.3f} % median {b['median_shift_pct']:+.3f} %" if b else ""
                print(f"  {key:<11} regressions at +1 %: {v['regressions_1pct']:>2}/{a['trials']}  "
                      f"median {v['median_us']:.2f} us  ratio {v['median_ratio']:.4f}{bias}")


SECTIONS = ("one", "two", "all", "aa", "celery")


def main(argv: list[str]) -> int:
    sections = argv or ["one", "two", "all"]
    if unknown := [s for s in sections if s not in SECTIONS]:
        raise SystemExit(f"unknown section(s) {', '.join(unknown)}: choose from {', '.join(SECTIONS)}")
    gpus = list_gpus()
    if wanted := os.environ.get("FLEET_GPUS"):
        gpus = [g for g in gpus if str(g.index) in wanted.split(",")]
    if not gpus:
        raise SystemExit("no GPU: nvidia-smi lists none")
    out = Path(os.environ.get("OUT", "."))
    work = Path(tempfile.mkdtemp(prefix="gate-fleet-"))
    repo, base, shas = subject_repo(work)
    print(f"{len(gpus)} GPU(s): {', '.join(str(g) for g in gpus)}; revisions {', '.join(shas)}", flush=True)
    results: dict = {}
    if any(s in ("one", "two", "all") for s in sections):
        warm_s = warm_objects(work, repo, base, shas["binding"], gpus[0])
        print(f"objects warmed by gate run of the baseline and the binding in {warm_s:.0f} s", flush=True)
    for section in sections:
        if section in ("one", "two", "all"):
            results[section] = batch(work, section, repo, base, shas, gpus[:{"one": 1, "two": 2}.get(section, len(gpus))])
        elif section == "celery":
            results[section] = celery_batch(work, repo, base, shas, gpus)
        else:
            results[section] = aa(work, repo, base, shas, gpus, out)
        # Each section kept as it ends: a device call cut short still leaves what it measured.
        (out / f"fleet-{'-'.join(sections)}.json").write_text(json.dumps(results, indent=1, default=str))
        print(f"{section}: done", flush=True)
    table(results)
    return 0 if all(j["as_expected"] and j["verdicts"] == 1 for r in results.values() for j in r.get("jobs", [])) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
