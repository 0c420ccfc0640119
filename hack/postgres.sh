#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 for the role
# postgres without a password (trust on loopback only): installs the
# Debian package postgresql when missing, creates the cluster when there
# is none, starts it when stopped. Tests create (and drop) their own
# databases on it.
set -euo pipefail

addr_ok() { psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -tAc 'SELECT 1' >/dev/null 2>&1; }

if addr_ok; then
  echo "postgres: running on 127.0.0.1:5432"
  exit 0
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  echo "postgres: installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql postgresql-client >/dev/null
fi

ver=$(ls /usr/lib/postgresql | sort -V | tail -1)
if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$ver main"; then
  echo "postgres: creating cluster $ver main"
  pg_createcluster "$ver" main >/dev/null
fi

# The test role: postgres over TCP on loopback, no password. Only the
# loopback lines are changed; the server listens on localhost only (the
# Debian default).
hba=/etc/postgresql/$ver/main/pg_hba.conf
if ! grep -q '^host *all *all *127.0.0.1/32 *trust' "$hba"; then
  sed -i -E 's|^(host +all +all +127\.0\.0\.1/32 +)[a-z0-9-]+|\1trust|; s|^(host +all +all +::1/128 +)[a-z0-9-]+|\1trust|' "$hba"
  grep -q '^host *all *all *127.0.0.1/32 *trust' "$hba" || echo "host all all 127.0.0.1/32 trust" >>"$hba"
fi

echo "postgres: starting $ver main"
pg_ctlcluster "$ver" main start 2>/dev/null || pg_ctlcluster "$ver" main reload

for _ in $(seq 1 100); do
  if addr_ok; then echo "postgres: running on 127.0.0.1:5432"; exit 0; fi
  sleep 0.2
done
echo "postgres: did not come up on 127.0.0.1:5432 (see /var/log/postgresql/postgresql-$ver-main.log)" >&2
exit 1
