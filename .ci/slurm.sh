#!/usr/bin/env bash
# Starts a one-node Slurm on loopback for the Slurm tests (installing Debian's slurm-wlm and munge
# first where missing) and prints the lines CI evaluates:
#   export SLURM_CONF=/tmp/migpool-slurm/etc/slurm.conf
#   export MIGPOOL_TEST_SLURM=1
#   export MIGPOOL_TEST_SLURM_DIR=/tmp/migpool-slurm
#   export MIGPOOL_TEST_SLURM_NODE=gpu01
# Use: slurm_env=$(.ci/slurm.sh) && eval "$slurm_env". Stop it with .ci/slurm-stop.sh.
#
# Everything lives under $MIGPOOL_SLURM_DIR (default /tmp/migpool-slurm): its own munge key and
# socket, slurm.conf and gres.conf, spool and state dirs, logs, pid files, and stand-in GPU device
# files (device nodes under dev/ that act as /dev/null), so nothing of a system Slurm is touched.
# The nodes are declared as most sites do: in a file slurm.conf `Include`s (etc/nodes.conf), as a
# host list, `NodeName=gpu[01-02]`. gpu01 is this host (NodeHostname `hostname -s`, NodeAddr
# 127.0.0.1); gpu02 names a host that does not exist (its slurmd port has no listener), so it stays
# down and only shows that migpool leaves the rest of a host list alone. gpu01's GPU GRES are typed
# as Slurm 22.05's AutoDetect=nvml names the MIG devices of an A100-SXM4-80GB
# (nvidia_a100_3g.39gb: a 3g.40gb instance has 39.25 GiB), one stand-in file per MIG device, as
# `Name=gpu Type=<type> File=...`. A job asking for `--gres=gpu:nvidia_a100_1g.10gb:1` gets one of
# them (SLURM_JOB_GPUS / CUDA_VISIBLE_DEVICES). (No AccountingStorageTRES: slurmctld refuses GRES
# TRES without slurmdbd.) Debian/Ubuntu, as root or with sudo. Everything but the export lines goes to
# stderr. Starting again stops what runs there first and starts afresh.
set -euo pipefail

dir=${MIGPOOL_SLURM_DIR:-/tmp/migpool-slurm}
ctld_port=${MIGPOOL_SLURM_CTLD_PORT:-6817}
slurmd_port=${MIGPOOL_SLURM_SLURMD_PORT:-6818}
host=$(hostname -s)
node=gpu01

log() { echo "slurm.sh: $*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurm-wlm and munge"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm slurm-client munge >&2
fi

# A previous run in the same dir: stop it first.
"$(dirname "$0")/slurm-stop.sh" >&2 || true

as_root rm -rf "$dir"
as_root mkdir -p "$dir"/{etc,munge,spool/ctld,spool/d,log,run,dev}
as_root chmod 0755 "$dir"
as_root chmod 0700 "$dir/munge"

# munge: its own key and socket (Slurm finds it through AuthInfo=socket=...).
as_root dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
as_root chmod 0400 "$dir/munge/munge.key"
as_root munged --force --key-file="$dir/munge/munge.key" --socket="$dir/run/munge.socket" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
for _ in $(seq 1 50); do [ -S "$dir/run/munge.socket" ] && break; sleep 0.1; done
[ -S "$dir/run/munge.socket" ] || { log "munged did not start; see $dir/log/munged.log"; exit 1; }

# Stand-in GPU devices: one A100-SXM4-80GB cut as 3g.40gb + 2g.20gb + 2x1g.10gb (all 7 compute
# slices), one device per MIG device, typed as Slurm 22.05's AutoDetect=nvml names them. slurmd wants
# character devices: each stand-in is a device node of /dev/null's kind (1,3), named nvidia<N> so
# that Slurm's gpu plugin numbers it N (CUDA_VISIBLE_DEVICES). migpool slurm apply rewrites gpu01's
# records.
cat >"$dir/etc/gres.conf" <<EOF
# gres.conf of the migpool test Slurm (stand-in device files)
NodeName=$node Name=gpu Type=nvidia_a100_3g.39gb File=$dir/dev/nvidia0
NodeName=$node Name=gpu Type=nvidia_a100_2g.20gb File=$dir/dev/nvidia1
NodeName=$node Name=gpu Type=nvidia_a100_1g.10gb File=$dir/dev/nvidia2
NodeName=$node Name=gpu Type=nvidia_a100_1g.10gb File=$dir/dev/nvidia3
EOF
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13; do as_root mknod -m 0666 "$dir/dev/nvidia$i" c 1 3; done

cpus=$(nproc)
cat >"$dir/etc/slurm.conf" <<EOF
# slurm.conf of the migpool test Slurm: one node on loopback
ClusterName=migpool
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=300
KillWait=5
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
Include nodes.conf
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$dir/etc/nodes.conf" <<EOF
# GPU nodes of the migpool test Slurm, as a host list
NodeName=gpu[01-02] NodeHostname=$host,migpool-absent-host NodeAddr=127.0.0.1,127.0.0.1 Port=[$slurmd_port-$((slurmd_port + 1))] CPUs=$cpus RealMemory=1000 Gres=gpu:nvidia_a100_3g.39gb:1,gpu:nvidia_a100_2g.20gb:1,gpu:nvidia_a100_1g.10gb:2 State=UNKNOWN
EOF

export SLURM_CONF="$dir/etc/slurm.conf"
as_root env SLURM_CONF="$SLURM_CONF" slurmctld -i
as_root env SLURM_CONF="$SLURM_CONF" slurmd

ok=0
for _ in $(seq 1 60); do
  state=$(sinfo -h -n "$node" -o '%T' 2>/dev/null || true)
  case "$state" in
  idle*) ok=1; break ;;
  esac
  sleep 0.5
done
if [ "$ok" -ne 1 ]; then
  log "node $node is not idle (sinfo says '${state:-nothing}'); see $dir/log/slurmctld.log and $dir/log/slurmd.log"
  tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 || true
  exit 1
fi

log "Slurm $(sinfo -V | awk '{print $2}') is up: node $node, controller on 127.0.0.1:$ctld_port, config $SLURM_CONF"
echo "export SLURM_CONF=$SLURM_CONF"
echo "export MIGPOOL_TEST_SLURM=1"
echo "export MIGPOOL_TEST_SLURM_DIR=$dir"
echo "export MIGPOOL_TEST_SLURM_NODE=$node"
