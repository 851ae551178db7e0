#!/usr/bin/env bash
# Stops the PostgreSQL cluster that .ci/postgres.sh started (the newest installed version's
# `main` cluster). Does nothing when it is not running or PostgreSQL is not installed.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

version=$(for bin in /usr/lib/postgresql/*/bin/postgres; do
  [ -x "$bin" ] && basename "$(dirname "$(dirname "$bin")")"
done | sort -n | tail -n 1)
[ -n "$version" ] || exit 0

status=$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" { print $4 }')
if [ "$status" = online ]; then
  as_root pg_ctlcluster "$version" main stop >&2
  echo "postgres-stop.sh: stopped cluster $version/main" >&2
fi
