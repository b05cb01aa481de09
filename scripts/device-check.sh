#!/usr/bin/env bash
# The one script the team runs on the GPU machine: carried wheels, versions, GPU tests, benchmarks.
# Usage (repo root): scripts/device-check.sh        logs and JSON go to $OUT (default ./device-out)
set -uo pipefail
OUT="${OUT:-$PWD/device-out}"; mkdir -p "$OUT"; export OUT PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PATH="$PATH:/usr/local/cuda/bin"
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
nvidia-smi -L; nvcc --version | tail -1; ncu --version | tail -1
python3 -c 'import torch, scipy, numpy; print("torch", torch.__version__, "cuda", torch.version.cuda, "scipy", scipy.__version__, "numpy", numpy.__version__)'

declare -A STATUS
t0=$SECONDS
timeout 240 python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log"
STATUS[gpu-tests]="exit ${PIPESTATUS[0]}, $((SECONDS - t0)) s"
t0=$SECONDS
timeout 300 python3 bench/gate_quality.py 2>&1 | tee "$OUT/gate-quality.log"
STATUS[gate-quality]="exit ${PIPESTATUS[0]}, $((SECONDS - t0)) s"
if [ -f bench/flashcore_latency.py ]; then
  t0=$SECONDS
  timeout 120 python3 bench/flashcore_latency.py 2>&1 | tee "$OUT/flashcore-latency.log"
  STATUS[flashcore-latency]="exit ${PIPESTATUS[0]}, $((SECONDS - t0)) s"
fi

echo; echo "== device check"
tail -1 "$OUT/gpu-tests.log"
sed -n '/^== gate quality/,$p' "$OUT/gate-quality.log"
for k in "${!STATUS[@]}"; do printf '%-18s %s\n' "$k" "${STATUS[$k]}"; done
