#!/usr/bin/env bash
# Create .venv and install the gate with the extras named in $1 (default: none), idempotently.
# Usage: scripts/setup.sh [test|worker|...]
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
# Submitted code compiles and runs in a bubblewrap box (gate/box.py): Debian's package.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
  else
    echo "bwrap missing: install Debian's 'bubblewrap' package (or GATE_BOX=off for trusted code)" >&2
  fi
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install -q -e ".[$extras]"
else
  .venv/bin/python -m pip install -q -e .
fi
