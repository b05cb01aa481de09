#!/usr/bin/env bash
# Set up everything the CPU test suite needs on a fresh machine, then run it.
# GPU tests (marked `gpu`) are skipped here; scripts/device-check.sh runs them on a GPU machine.
# tests/browser/test_installed_wheel.py builds the wheel and serves every page from a fresh venv
# (scripts/install-wheel.sh, as the images do).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test

# Browser tests drive Debian's Chromium (never a downloaded browser).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium missing: install Debian's 'chromium' package for the browser tests" >&2
  fi
fi

# Storage and API tests run against a real PostgreSQL on loopback as well as SQLite: installed
# (as root) when missing, trusted for the postgres role on loopback, and started.
scripts/test-postgres.sh
export GATE_TEST_POSTGRES_URL="${GATE_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/postgres}"

# The architecture's never-rules (docs/design.md) are import-linter contracts in pyproject.toml.
.venv/bin/lint-imports
# Most tests wait on nvcc, servers, Chromium or git: four pytest-xdist workers keep both cores busy.
# `loadgroup` keeps each `xdist_group` (tests/browser/conftest.py says which and why) on one worker.
exec .venv/bin/python -m pytest -q -n 4 --dist loadgroup "$@"
