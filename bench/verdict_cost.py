"""What do the defences cost a verdict? The warm verdict time of this gate beside an earlier gate's, in
one run on one GPU (issue 10: "the warm verdict time grows by at most 2 s").

    git archive c381cf8 | (mkdir -p .carry/before && tar -x -C .carry/before)    # on the CPU machine
    python3 bench/verdict_cost.py .carry/before                                    # on the GPU machine

c381cf8 is the last commit before the integrity defences (all-streams check, physical floor, output
fingerprinted on the caller's stream, canaries, rotating input sets) and before the box, the GPU watch
and the four graph captures per side: every cost added since is in the difference.

Each gate runs its own `bench/gate_quality.py` subject and `verdict_time` (the same functions in both:
`gate_job` on the FMA chain, 3 shapes, with the profile) in a child process of its own tree, sharing
nothing on disk with the other: first a cold verdict (empty caches; its figure is kept but not
compared, it is mostly nvcc), then `WARM_ROUNDS` warm ones per gate, the two gates taking turns so
that a drift of the machine shows in both. The first warm verdict is a kernel-only change (its
binding object cached), the later ones repeat it with everything cached. Table on stdout, JSON to
$OUT/verdict_cost.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

NOW = Path(__file__).resolve().parent.parent
WARM_ROUNDS = int(os.environ.get("GATE_VERDICT_COST_ROUNDS", "3"))
STEP_LIMIT_S = 240

# Runs inside a gate's tree: one verdict of its own quality subject, the repository made on first use.
DRIVER = """
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
import gate_quality as q
work, step = Path(sys.argv[1]), sys.argv[2]
repo, shas_file = work / "subject-repo", work / "shas.json"
if not shas_file.exists():
    repo, shas = q.subject_repo(work)
    shas_file.write_text(json.dumps({str(k): v for k, v in shas.items()}))
shas = json.loads(shas_file.read_text())
candidate = shas["3"] if step == "cold" else shas["5"]
row = q.verdict_time(work / "data", repo, candidate, shas["0"], step)
print("VERDICT " + json.dumps({k: row[k] for k in ("label", "total_s", "verdict", "stages_s", "profile_s")}))
"""


def verdict(tree: Path, work: Path, step: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, "-c", DRIVER, str(work), step], cwd=tree, env=env,
                              capture_output=True, text=True, timeout=STEP_LIMIT_S)
    except subprocess.TimeoutExpired:
        return {"label": step, "error": f"no verdict within {STEP_LIMIT_S} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("VERDICT ")]
    if done.returncode != 0 or not lines:
        return {"label": step, "error": f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"}
    return json.loads(lines[-1][len("VERDICT "):])


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not (Path(argv[0]) / "bench" / "gate_quality.py").is_file():
        print("usage: bench/verdict_cost.py EARLIER_GATE_TREE (a tree with bench/gate_quality.py)", file=sys.stderr)
        return 2
    gates = {"before": Path(argv[0]).resolve(), "now": NOW}
    work = Path(tempfile.mkdtemp(prefix="verdict-cost-"))
    rows: dict[str, list[dict]] = {name: [] for name in gates}
    steps = ["cold"] + [f"warm {i + 1}" for i in range(WARM_ROUNDS)]
    for step in steps:
        for name, tree in gates.items():        # taking turns: before, now, before, now, ...
            row = verdict(tree, work / name, step)
            rows[name].append(row)
            print(f"{name:<7} {step:<7} {row.get('total_s', float('nan')):6.1f} s  {row.get('verdict', row.get('error'))}",
                  flush=True)
    summary = {}
    for name in gates:
        warm = [r["total_s"] for r in rows[name][1:] if "total_s" in r]
        summary[name] = {"warm_median_s": statistics.median(warm) if warm else None, "warm_s": warm,
                         "cold_s": rows[name][0].get("total_s")}
    out = Path(os.environ.get("OUT", "."))
    (out / "verdict_cost.json").write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))

    print(f"\n== verdict cost: this gate beside {gates['before'].name} (warm = median of {WARM_ROUNDS})")
    for name in gates:
        s = summary[name]
        warm = ", ".join(f"{x:.1f}" for x in s["warm_s"])
        print(f"{name:<7} cold {s['cold_s'] or float('nan'):6.1f} s   warm {s['warm_median_s'] or float('nan'):6.1f} s ({warm})")
    if summary["before"]["warm_median_s"] and summary["now"]["warm_median_s"]:
        grown = summary["now"]["warm_median_s"] - summary["before"]["warm_median_s"]
        print(f"warm verdict grew by {grown:+.1f} s")
        for step_before, step_now in zip(rows["before"][1:2], rows["now"][1:2]):
            print("stages (first warm), before:", {k: round(v, 2) for k, v in step_before.get("stages_s", {}).items()})
            print("stages (first warm), now:   ", {k: round(v, 2) for k, v in step_now.get("stages_s", {}).items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
