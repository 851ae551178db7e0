#!/usr/bin/env bash
# Restarts one daemon of the Slurm that .ci/slurm.sh started: `slurm-restart.sh slurmd` or
# `slurm-restart.sh slurmctld` (what `systemctl restart slurmd` does on a real node). The test site
# file of `migpool slurm apply` names it as the node's restart command.
set -euo pipefail

dir=${MIGPOOL_SLURM_DIR:-/tmp/migpool-slurm}
daemon=${1:-}
case "$daemon" in
slurmd | slurmctld) ;;
*) echo "usage: slurm-restart.sh slurmd|slurmctld" >&2; exit 2 ;;
esac
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

pidfile="$dir/run/$daemon.pid"
pid=$(cat "$pidfile" 2>/dev/null || true)
if [ -n "$pid" ] && grep -qa "$daemon" "/proc/$pid/cmdline" 2>/dev/null; then
  as_root kill -TERM "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then echo "slurm-restart.sh: $daemon ($pid) did not stop in 10 s" >&2; exit 1; fi
fi
export SLURM_CONF="$dir/etc/slurm.conf"
if [ "$daemon" = slurmctld ]; then as_root env SLURM_CONF="$SLURM_CONF" slurmctld; else as_root env SLURM_CONF="$SLURM_CONF" slurmd; fi
# Wait until the controller answers again.
for _ in $(seq 1 50); do scontrol ping >/dev/null 2>&1 && exit 0; sleep 0.2; done
echo "slurm-restart.sh: the controller does not answer after restarting $daemon; see $dir/log/" >&2
exit 1
