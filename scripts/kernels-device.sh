#!/usr/bin/env bash
# Runs on the GPU machine from any copy of the repo: build both FlashCore kernels (ptxas report),
# correctness tests, then the latency table (printed last). Logs go to $OUT (default ./.kernels-out).
# Extra arguments are passed to bench/flashcore_latency.py (e.g. --wmma-configs w4m1,w8m1).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/.kernels-out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export FLASHCORE_BUILD_ROOT="${FLASHCORE_BUILD_ROOT:-/tmp/flashcore-build}"

echo "== device"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "| torch", torch.__version__, "| cuda", torch.version.cuda, "|", torch.cuda.get_device_name(), torch.cuda.get_device_capability())'

echo "== build (ptxas)"
t0=$SECONDS
python3 extension/flashcore_build.py > "$OUT/build.log" 2>&1
build_rc=$?
echo "build exit $build_rc in $((SECONDS - t0)) s"
grep -E "^==== build|error" "$OUT/build.log" | head -20
sed -n '/^==== ptxas/,/^==== build/p' "$OUT/build.log" | grep -v "^==== build" | tee "$OUT/ptxas.txt"
[ $build_rc -eq 0 ] || exit $build_rc

echo "== tests"
t0=$SECONDS
python3 -m pytest -q -m gpu tests/gpu/test_flashcore_kernels.py -p no:cacheprovider -rs -s > "$OUT/pytest.log" 2>&1
test_rc=$?
grep -E "max_err" "$OUT/pytest.log" > "$OUT/errors.txt"
awk '{for(i=1;i<=NF;i++) if ($i ~ /^max_err=/) {split($i,a,"="); if (a[2]+0 > m[$1]) m[$1]=a[2]+0}} END {for (k in m) print "worst max_err", k, m[k]}' "$OUT/errors.txt"
grep -E "FAILED|Error|passed|failed" "$OUT/pytest.log" | tail -n 25
echo "tests exit $test_rc in $((SECONDS - t0)) s"

echo "== latency"
python3 bench/flashcore_latency.py --json "$OUT/latency.json" "$@" 2>&1 | tee "$OUT/bench.log"
exit $(( test_rc != 0 ? test_rc : PIPESTATUS[0] ))
