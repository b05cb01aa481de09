#!/usr/bin/env bash
# Fetch into .whl/ (git-ignored) the cp312 wheels that the GPU machine lacks for the service side
# (gate demo, the storage and API code); its python3 already has torch, numpy, scipy, jinja2, httpx.
# cryptography (with cffi, pycparser): pyjwt signs a GitHub App's JWT with it, and the GitHub stand-in
# of the tests makes the App's key with it (tests/gpu/test_source_lines_gpu.py sends a Check Run).
# celery (with kombu, billiard, vine, amqp, click-didyoumean, click-plugins, click-repl, prompt_toolkit,
# wcwidth, tzdata) and redis: the fleet-celery part's workers and their broker client.
# scripts/device-check.sh installs them from .whl/ when the folder travels with the call.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
fetch() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .whl "$@"
}
fetch fastapi starlette pydantic pydantic-settings python-dotenv annotated-types typing-inspection \
  typing-extensions annotated-doc opentelemetry-api sqlalchemy greenlet alembic mako uvicorn plotly \
  ruptures tenacity pyjwt cxxfilt itanium-demangler fastapi-offline cryptography cffi pycparser \
  celery kombu billiard vine amqp click-didyoumean click-plugins click-repl prompt_toolkit wcwidth redis tzdata
# pydantic pins its core exactly: take the version its metadata names, not the newest.
core=$(unzip -p .whl/pydantic-2*.whl '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==\([0-9.]*\).*/\1/p')
fetch "pydantic-core==$core"
ls .whl
