#!/usr/bin/env bash
# Create .venv and install the gate (editable) with the extras named in $1 (default: none).
# Usage: scripts/setup.sh [test|worker|...]
# Idempotent and quick when nothing changed: an editable install sees code changes by itself, so pip
# runs again only when pyproject.toml (dependencies, entry points) or the Python differ from what a
# stamp in .venv says these extras were installed with. SETUP_FORCE=1 installs anyway.
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
stamp=".venv/.installed-${extras:-base}"
want="$(python3 -c 'import sys; print(sys.version)' | head -n1) $(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "${SETUP_FORCE:-0}" != 1 ] && [ -x .venv/bin/gate ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${extras:+[$extras]}"
echo "$want" > "$stamp"
