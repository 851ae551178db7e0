#!/usr/bin/env bash
# Starts a local PostgreSQL server for the store tests (installing it first where missing) and
# prints the one line CI evaluates:
#   export MIGPOOL_TEST_POSTGRES_URL=postgres://migpool:migpool@127.0.0.1:PORT/migpool_test
# Use: pg_env=$(.ci/postgres.sh) && eval "$pg_env". Safe to run again: an installed server, a
# running cluster, the role and the database are all left as they are. Debian/Ubuntu, as root or
# with sudo. Everything but that line goes to stderr. Stop it with .ci/postgres-stop.sh.
set -euo pipefail

role=migpool
password=migpool
database=migpool_test

log() { echo "postgres.sh: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }

newest_version() {
  local bin
  for bin in /usr/lib/postgresql/*/bin/postgres; do
    [ -x "$bin" ] && basename "$(dirname "$(dirname "$bin")")"
  done | sort -n | tail -n 1
}

version=$(newest_version)
if [ -z "$version" ]; then
  log "no PostgreSQL server found; installing the postgresql package"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  version=$(newest_version)
  if [ -z "$version" ]; then
    log "apt-get installed postgresql but no /usr/lib/postgresql/*/bin/postgres appeared"
    exit 1
  fi
fi

cluster_field() { pg_lsclusters -h | awk -v v="$version" -v f="$1" '$1 == v && $2 == "main" { print $f }'; }

if [ -z "$(cluster_field 3)" ]; then
  log "creating cluster $version/main"
  as_root pg_createcluster "$version" main >&2
fi
if [ "$(cluster_field 4)" != online ]; then
  log "starting cluster $version/main"
  as_root pg_ctlcluster "$version" main start >&2
fi
port=$(cluster_field 3)

for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p "$port" && break
  sleep 1
done
if ! pg_isready -q -h 127.0.0.1 -p "$port"; then
  log "PostgreSQL $version/main does not accept connections on 127.0.0.1:$port; see /var/log/postgresql/postgresql-$version-main.log"
  exit 1
fi

cd /
as_postgres psql -p "$port" -X -q -v ON_ERROR_STOP=1 >&2 <<SQL
DO \$\$ BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
    ALTER ROLE $role LOGIN PASSWORD '$password';
  ELSE
    CREATE ROLE $role LOGIN PASSWORD '$password';
  END IF;
END \$\$;
SELECT 'CREATE DATABASE $database OWNER $role' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$database') \gexec
SQL

log "PostgreSQL $version/main is up on 127.0.0.1:$port, database $database, role $role"
echo "export MIGPOOL_TEST_POSTGRES_URL=postgres://$role:$password@127.0.0.1:$port/$database"
