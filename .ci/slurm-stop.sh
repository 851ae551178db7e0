#!/usr/bin/env bash
# Stops the Slurm that .ci/slurm.sh started: slurmd, slurmctld and munged, by the pids in their
# pid files under $MIGPOOL_SLURM_DIR (default /tmp/migpool-slurm), waiting for each to end.
# Does nothing for daemons that are not running.
set -euo pipefail

dir=${MIGPOOL_SLURM_DIR:-/tmp/migpool-slurm}
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

stop() {
  local name=$1 pidfile=$2 pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null || true)
  [ -n "$pid" ] || return 0
  # Only the daemon that wrote the pid file: its command line must name it.
  if ! grep -qa "$name" "/proc/$pid/cmdline" 2>/dev/null; then return 0; fi
  as_root kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || { echo "slurm-stop.sh: stopped $name ($pid)" >&2; return 0; }
    sleep 0.2
  done
  as_root kill -KILL "$pid" 2>/dev/null || true
  echo "slurm-stop.sh: killed $name ($pid) after 10 s" >&2
}

stop slurmd "$dir/run/slurmd.pid"
stop slurmctld "$dir/run/slurmctld.pid"
stop munged "$dir/run/munged.pid"
