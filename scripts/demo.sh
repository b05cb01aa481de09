#!/usr/bin/env bash
# Set up the gate (the worker extra adds torch when a GPU is here) and run `gate demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  scripts/setup.sh worker
else
  scripts/setup.sh
fi
exec .venv/bin/gate demo "$@"
