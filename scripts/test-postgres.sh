#!/usr/bin/env bash
# The PostgreSQL the tests expect: postgresql+psycopg://postgres@127.0.0.1:5432/postgres, no password.
# Where it already answers, nothing is done. Else, as root: Debian's `postgresql` package is installed
# if missing (its postinst makes the cluster "<version> main" on port 5432 but may leave it down, as in
# a container without init), the postgres role is trusted on loopback, and the cluster is started.
# Idempotent. PG_ETC (default /etc/postgresql) is the clusters' configuration, for
# tests/packaging/test_test_postgres.py, which runs the missing-server branch against stand-ins.
set -euo pipefail
PG_ETC="${PG_ETC:-/etc/postgresql}"
# First match wins in pg_hba.conf: this line goes above Debian's `host all all 127.0.0.1/32 scram-sha-256`.
TRUST="host all postgres 127.0.0.1/32 trust"

# Ready means the tests' URL works: accepting connections is not enough without the trust line.
ready() { psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -w -tAc 'select 1' >/dev/null 2>&1; }

ready && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "PostgreSQL does not answer on 127.0.0.1:5432: install Debian's 'postgresql' package and trust" \
       "the postgres role on loopback ($TRUST), or run scripts/test.sh as root" >&2
  exit 0   # the PostgreSQL-parametrised tests then say they cannot connect
fi
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls "$PG_ETC" 2>/dev/null | sort -V | tail -n1)
hba="$PG_ETC/$version/main/pg_hba.conf"
[ -n "$version" ] && [ -f "$hba" ] || { echo "no PostgreSQL cluster under $PG_ETC after installing it" >&2; exit 1; }
if ! grep -qxF "$TRUST" "$hba"; then
  sed -i "1i $TRUST" "$hba"
fi
# start, or reload a running cluster so the trust line applies
pg_ctlcluster --skip-systemctl-redirect "$version" main start 2>/dev/null \
  || pg_ctlcluster --skip-systemctl-redirect "$version" main reload
for _ in $(seq 60); do
  ready && exit 0
  sleep 0.5
done
echo "PostgreSQL $version did not answer on 127.0.0.1:5432 after starting" >&2
exit 1
