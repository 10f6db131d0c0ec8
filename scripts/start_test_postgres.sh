#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster on 127.0.0.1 for tests and print its SQLAlchemy URL.
# Usage: scripts/start_test_postgres.sh PORT [DATA_DIR]
#   DATA_DIR defaults to a new temporary directory. Trust authentication, loopback only.
#   Run as root, the server runs as the "postgres" system user (initdb refuses root).
#   The cluster lives in DATA_DIR/data, its logs in DATA_DIR.
#   Stop it with: kill -INT "$(head -1 DATA_DIR/data/postmaster.pid)"
set -euo pipefail
port=${1:?usage: start_test_postgres.sh PORT [DATA_DIR]}
dir=${2:-$(mktemp -d /tmp/pluie-pg.XXXXXX)}
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bin/initdb" ] || { echo "no PostgreSQL server binaries found (set PG_BIN)" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
mkdir -p "$dir"
if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
if [ ! -s "$dir/data/PG_VERSION" ]; then
  as_owner "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
fi
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off -c full_page_writes=off -c max_connections=100" \
  start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
echo "postgresql+psycopg://postgres@127.0.0.1:$port/postgres"
