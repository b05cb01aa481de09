#!/usr/bin/env bash
# The one script for the GPU machine: carried wheels, versions, then the parts asked for, a short
# table last. Usage (repo root): scripts/device-check.sh [tests] [quality] [spread] [drift] [streams] [cost] [demo] [latency] [reuse] [ab] [fleet] [fleet-aa] [fleet-celery]
# (no argument = all but ab, compat and the fleet parts; one device call runs at most 10 minutes, so the parts are split across calls).
# PART@GPUS (e.g. demo@0 tests@1,2,3) runs that part in the background with CUDA_VISIBLE_DEVICES=GPUS,
# beside the others: on a machine with several GPUs, parts that need one GPU each share one call.
#   quality  bench/gate_quality.py sections GATE_QUALITY_SECTIONS (default verdict,aa,det,sdpa: ~6 min
#            on an H100; `aa` alone prints the A/A bias at both sizes)
#   spread   bench/gate_quality.py spread: one revision in 5 separate jobs x 3 arrangements (~5 min)
#   drift    bench/timing_drift.py: why one binary read 457 vs 597 us, one factor at a time (< 5 min)
#   streams  bench/all_streams_loop.py: the all-streams check's two figures on honest calls (< 1 min)
#   reuse    bench/reuse_cost.py: ten kernels, one changed, against that one alone; a shared header (~6 min)
#   latency  bench/flashcore_latency.py, with FLASHCORE_LATENCY_ARGS (e.g. "--no-scalar --wgmma-configs
#            c2n128p-tiles,c3n128") and a limit of FLASHCORE_LATENCY_LIMIT_S (default 180 s)
#   ab       bench/kernel_ab.py KERNEL_AB_ARGS: flashcore_wgmma revisions built side by side and timed in
#            turns with cuDNN (e.g. ".carry/ab/before . --configs c2n128p"; the script's header says how
#            to carry a revision); a limit of KERNEL_AB_LIMIT_S (default 300 s). Not part of "all".
#   fleet    bench/fleet.py FLEET_SECTIONS (default "all one"), on a machine with several GPUs: 8
#            revisions of the FMA chain submitted at once to `gate serve` with every GPU (all), then
#            with one (one); per job GPU, verdict, deciding rule, wall time, and the ratio of the batch
#            times. Where both do not fit one call, FLEET_SECTIONS=all, then FLEET_SECTIONS=one.
#   fleet-aa bench/fleet.py aa: gate_quality's aa and det sections on GPU 0 while the other GPUs gate
#            the batch in a loop (~6 min). Not part of "all".
#   fleet-celery  bench/fleet.py celery: the batch through redis-server (carried in .debs/, below) and
#            one Celery `gate worker --gpu N` per GPU; needs celery's wheels in .whl (scripts/device-wheels.sh).
#   compat   gate run of each public repository carried in .carry/compat/NAME (tags gated, aa, slowed,
#            broken; docs/compatibility.md): aa against gated, slowed and broken against aa. Not part of "all".
#   tests    tests/gpu (GATE_GPU_TESTS), with one pytest-xdist worker per visible GPU (tests/gpu/conftest.py).
#   cost     bench/verdict_cost.py: the warm verdict beside the gate before the defences (~4 min); needs
#            that gate's tree carried in .carry/before: git archive c381cf8 | tar -x -C .carry/before
# Logs and JSON go to $OUT (default ./device-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-out}"; mkdir -p "$OUT"; export OUT PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PATH="$PATH:/usr/local/cuda/bin"
# The box for submitted code (gate/box.py) needs bubblewrap, and the fleet-celery part a Redis; where
# they cannot be installed, .debs carried in .debs/ are unpacked (not installed) and used from there.
# Fetch them on a Debian or Ubuntu machine with: (mkdir -p .debs && cd .debs && apt-get download
# bubblewrap libcap2 libselinux1 libpcre2-8-0 redis-server redis-tools libjemalloc2 liblzf1 libatomic1
# libssl3 libsystemd0) and carry .debs with the working tree.
if { ! command -v bwrap || ! command -v redis-server; } >/dev/null 2>&1 && ls .debs/*.deb >/dev/null 2>&1; then
  for deb in .debs/*.deb; do dpkg -x "$deb" /opt/gate-debs; done
  export PATH="$PATH:/opt/gate-debs/usr/bin"
  for tool in bwrap redis-server; do
    if command -v "$tool" >/dev/null && ldd "$(command -v "$tool")" | grep -q "not found"; then
      export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/opt/gate-debs/lib/x86_64-linux-gnu:/opt/gate-debs/usr/lib/x86_64-linux-gnu"
      break
    fi
  done
fi
echo "box: $(command -v bwrap || echo 'no bwrap') $(bwrap --version 2>/dev/null) GATE_BOX=${GATE_BOX:-bwrap}"
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
# This workplace asks that GPU clocks be left alone: ncu runs with --clock-control none (both sides
# of every comparison alike). Elsewhere the default is `base`.
export GATE_NCU_CLOCK_CONTROL="${GATE_NCU_CLOCK_CONTROL:-none}"
parts=("$@"); [ ${#parts[@]} -eq 0 ] && parts=(tests quality spread drift streams cost demo latency reuse)

nvidia-smi -L; nvcc --version | tail -1; ncu --version | tail -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

step() {   # step NAME SECONDS COMMAND...: run with a time limit, log to $OUT/NAME.log, its end to NAME.status
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  # SIGINT first: pytest (and its xdist workers) stop and still print what passed and failed.
  timeout -s INT -k 30 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "exit $?, $((SECONDS - t0)) s${CUDA_VISIBLE_DEVICES:+, GPUs $CUDA_VISIBLE_DEVICES}" > "$OUT/$name.status"
  echo "-- $name: $(cat "$OUT/$name.status")"
}
visible_gpus() { if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .; else nvidia-smi -L | grep -c '^GPU'; fi; }
run_part() {
  case "$1" in
    tests)   local n; n=$(visible_gpus)
             step gpu-tests "${GATE_GPU_TESTS_LIMIT_S:-585}" python3 -m pytest -m gpu ${GATE_GPU_TESTS:-tests/gpu} -q -p no:cacheprovider -W default -rfE $([ "$n" -gt 1 ] && echo "-n $n") ;;
    compat)  for repo in .carry/compat/*/; do
               local name; name=$(basename "$repo")
               step "compat-$name-aa" 420 python3 -m gate.cli run --repo "$repo" --sha aa --base gated
               step "compat-$name-slowed" 300 python3 -m gate.cli run --repo "$repo" --sha slowed --base aa
               step "compat-$name-broken" 300 python3 -m gate.cli run --repo "$repo" --sha broken --base aa
             done ;;
    quality) GATE_QUALITY_SECTIONS="${GATE_QUALITY_SECTIONS:-verdict,aa,det,sdpa}" \
             step gate-quality 540 python3 bench/gate_quality.py ;;
    spread)  step gate-spread 540 python3 bench/gate_quality.py spread ;;
    drift)   step timing-drift 300 python3 bench/timing_drift.py ;;
    streams) step all-streams 120 python3 bench/all_streams_loop.py ;;
    cost)    step verdict-cost 420 python3 bench/verdict_cost.py .carry/before ;;
    demo)    GATE_DATA_DIR=/tmp/gate-demo GATE_DATABASE_URL=sqlite:////tmp/gate-demo/gate.db \
             GATE_BENCH_BUDGET_S="${GATE_BENCH_BUDGET_S:-3}" step demo "${GATE_DEMO_LIMIT_S:-480}" python3 -m gate.cli demo --no-serve
             cp /tmp/gate-demo/gate.db "$OUT/demo-gate.db" 2>/dev/null ;;   # for scripts/screenshots.py
    reuse)   step reuse-cost 580 python3 bench/reuse_cost.py ;;
    ab)      step kernel-ab "${KERNEL_AB_LIMIT_S:-300}" python3 bench/kernel_ab.py ${KERNEL_AB_ARGS:-.} ;;
    fleet)   step fleet "${FLEET_LIMIT_S:-585}" python3 bench/fleet.py ${FLEET_SECTIONS:-all one} ;;
    fleet-aa) step fleet-aa "${FLEET_LIMIT_S:-585}" python3 bench/fleet.py aa ;;
    fleet-celery) step fleet-celery "${FLEET_LIMIT_S:-585}" python3 bench/fleet.py celery ;;
    latency) step flashcore-latency "${FLASHCORE_LATENCY_LIMIT_S:-180}" \
               python3 bench/flashcore_latency.py --json "$OUT/flashcore_latency.json" ${FLASHCORE_LATENCY_ARGS:-} ;;
    *) echo "unknown part: $1 (tests, quality, spread, drift, streams, cost, demo, latency, reuse, ab, compat, fleet, fleet-aa, fleet-celery)"; return 2 ;;
  esac
}
for spec in "${parts[@]}"; do
  if [[ "$spec" == *@* ]]; then
    (export CUDA_VISIBLE_DEVICES="${spec#*@}"; run_part "${spec%@*}") &
  else
    run_part "$spec"
  fi
done
wait

echo; echo "== device check: ${parts[*]}"
[ -f "$OUT/gpu-tests.log" ] && tail -1 "$OUT/gpu-tests.log"
[ -f "$OUT/gate-quality.log" ] && sed -n '/^== gate quality/,$p' "$OUT/gate-quality.log"
[ -f "$OUT/gate-spread.log" ] && sed -n '/^== gate quality/,$p' "$OUT/gate-spread.log"
[ -f "$OUT/timing-drift.log" ] && sed -n '/^== timing drift/,$p' "$OUT/timing-drift.log"
[ -f "$OUT/all-streams.log" ] && cat "$OUT/all-streams.log"
[ -f "$OUT/verdict-cost.log" ] && sed -n '/^== verdict cost/,$p' "$OUT/verdict-cost.log"
[ -f "$OUT/reuse-cost.log" ] && sed -n '/^== reuse cost/,$p' "$OUT/reuse-cost.log"
[ -f "$OUT/demo.log" ] && sed -n '/^commit /,$p' "$OUT/demo.log"
[ -f "$OUT/kernel-ab.log" ] && sed -n '/^median \/ cuDNN/,$p' "$OUT/kernel-ab.log"
for f in fleet fleet-aa fleet-celery; do [ -f "$OUT/$f.log" ] && sed -n '/^== fleet/,$p' "$OUT/$f.log"; done
for f in "$OUT"/compat-*.log; do [ -f "$f" ] && { echo "-- $(basename "$f" .log)"; grep -E 'accept|reject|error|incomplete|inconclusive' "$f" | tail -3; }; done
for f in "$OUT"/*.status; do [ -f "$f" ] && printf '%-28s %s\n' "$(basename "$f" .status)" "$(cat "$f")"; done
# The device tool brings back at most 8 files: the logs, JSON and status files travel as one archive.
(cd "$OUT" && shopt -s nullglob && files=(*.log *.json *.status) && [ ${#files[@]} -gt 0 ] \
  && tar czf logs.tgz "${files[@]}" && rm -f "${files[@]}")
