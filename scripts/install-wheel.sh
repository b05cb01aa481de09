#!/usr/bin/env bash
# Build the gate's wheel, or install one and prove the installed copy has what it serves.
# The images (docker/Dockerfile.server, docker/Dockerfile.worker) and CI (tests/packaging/test_wheel.py)
# both go through this script, so what CI installs and serves is what an image holds.
#
#   scripts/install-wheel.sh build [--python PY] SOURCE_DIR DEST_DIR    # DEST_DIR/flashcore_gate-*.whl
#   scripts/install-wheel.sh install [--python PY] [--no-deps] WHEEL [EXTRAS]
#
# build: PY's pip builds the wheel in an isolated build environment (pyproject.toml's build-system).
# install: pip-installs WHEEL (with its dependencies and EXTRAS, e.g. "worker,celery") into PY's
# environment (default: python3 on PATH), then checks from outside any checkout that the installed
# package finds its templates, static files and migrations through importlib.resources, and that the
# `gate` console script runs. --no-deps is for CI's throwaway environment, whose dependencies come
# from the test environment's own site-packages (the test says how).
set -euo pipefail

usage() { sed -n '6,7p' "$0" | sed 's/^# *//' >&2; exit 2; }

build() {
  local python=python3
  if [ "${1:-}" = --python ]; then python="$2"; shift 2; fi
  [ $# -eq 2 ] || usage
  local source="$1" dest="$2"
  mkdir -p "$dest"
  # No dependencies: they are the installer's business (pip resolves them from the wheel's metadata).
  "$python" -m pip wheel --quiet --no-deps --wheel-dir "$dest" "$source"
  ls "$dest"/flashcore_gate-*.whl
}

install() {
  local python=python3 deps=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --python) python="$2"; shift 2 ;;
      --no-deps) deps=(--no-deps); shift ;;
      -*) usage ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] && [ $# -le 2 ] || usage
  local wheel="$1" extras="${2:-}"
  [ -f "$wheel" ] || { echo "install-wheel: no wheel at $wheel" >&2; exit 2; }
  "$python" -m pip install --quiet --no-cache-dir "${deps[@]}" "$wheel${extras:+[$extras]}"
  # From / with no PYTHONPATH: a source checkout in the working directory must not stand in for it.
  (cd / && env -u PYTHONPATH "$python" - <<'EOF'
import importlib.resources

from alembic.script import ScriptDirectory

import dashboards
import gate
from gate.storage.schema import alembic_config

pages = importlib.resources.files("dashboards")
missing = [name for name in ("templates/base.html", "templates/revision.html", "static/gate.css", "static/gate.js")
           if not (pages / name).is_file()]
head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
if missing or not head:
    raise SystemExit(f"install-wheel: the installed package lacks {missing or 'its migrations'}")
import gate.api.pages  # noqa: E402,F401  (mounts the static files and loads the templates at import)
print(f"install-wheel: gate from {gate.__file__}, dashboards from {dashboards.__file__}, schema head {head}")
EOF
  )
  "$(dirname "$("$python" -c 'import sys; print(sys.executable)')")/gate" --help >/dev/null
}

[ $# -ge 1 ] || usage
command="$1"; shift
case "$command" in
  build) build "$@" ;;
  install) install "$@" ;;
  *) usage ;;
esac
