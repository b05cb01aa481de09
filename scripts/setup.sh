#!/usr/bin/env bash
# Create .venv and install the gate with the extras named in $1 (default: none), idempotently.
# Usage: scripts/setup.sh [test|worker|...]
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install -q -e ".[$extras]"
else
  .venv/bin/python -m pip install -q -e .
fi
