#!/usr/bin/env bash
# Set up everything the CPU test suite needs on a fresh machine, then run it.
# GPU tests (marked `gpu`) are skipped here; scripts/device-check.sh runs them on a GPU machine.
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

# Storage and API tests run against a real PostgreSQL on loopback as well as SQLite.
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  fi
fi
export GATE_TEST_POSTGRES_URL="${GATE_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/postgres}"

# The architecture's never-rules (docs/design.md) are import-linter contracts in pyproject.toml.
.venv/bin/lint-imports
exec .venv/bin/python -m pytest -q "$@"
