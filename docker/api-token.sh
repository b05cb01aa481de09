#!/bin/sh
# The API token of docker/compose.yaml: made on the first `up` and printed once, then kept in the
# `gatesecrets` volume, which only the server mounts (read-only). Never in an image, never in git.
# A GATE_API_TOKEN given in the environment is used instead, and nothing is stored.
# TOKEN_FILE: where it is kept (tests/packaging/test_images.py runs this script against a folder of its own).
set -eu
file="${TOKEN_FILE:-/secrets/api-token}"
if [ -n "${GATE_API_TOKEN:-}" ]; then
  echo "API token: GATE_API_TOKEN from the environment"
elif [ -s "$file" ]; then
  echo "API token: the one made on the first start, kept in the gatesecrets volume" \
       "(docker compose -f docker/compose.yaml exec server cat /run/gate/api-token)"
else
  umask 077
  python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > "$file.new"
  mv "$file.new" "$file"
  echo "API token (printed this once; writes need 'Authorization: Bearer <token>'): $(cat "$file")"
fi
