#!/usr/bin/env bash
# The test cluster for the slurm backend: a real single-node Slurm 22.05
# (Debian's slurmctld and slurmd, munge for authentication) on loopback,
# all of it in one directory (SLURM_TEST_DIR, default /var/tmp/strand-slurm):
# its own slurm.conf, a freshly generated munge key and munged socket, state,
# spool and logs. Nothing of the machine's own Slurm (if any) is touched.
#   deploy/slurm-cluster.sh up     start it; prints the env file to source
#   deploy/slurm-cluster.sh down   stop it (its daemons, by their pid files)
# The node offers 16 CPUs and 8 GiB whatever the host has
# (SlurmdParameters=config_overrides), so several one-CPU workers fit on
# two cores, and a bigger request is refused by Slurm itself. Partition
# strand (the default) takes the jobs; partition tiny gives one CPU and
# 100 MB a node, so a job asking more waits there for ever (PartitionConfig,
# MaxMemPerLimit), as on a cluster whose limits a request exceeds. Exits 77,
# saying why, where it cannot (no Slurm installed, not root).
set -euo pipefail
dir=${SLURM_TEST_DIR:-/var/tmp/strand-slurm}
ctld_port=${SLURM_TEST_PORT:-4817}

stop() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

case "${1:-}" in
up) ;;
down)
  stop
  exit 0
  ;;
*)
  echo "usage: $0 up|down" >&2
  exit 64
  ;;
esac

for tool in slurmctld slurmd munged mungekey sbatch; do
  if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
    echo "no $tool (deploy/install-deps.sh slurm installs it): the slurm tests will skip" >&2
    exit 77
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "the test cluster's daemons run as root: the slurm tests will skip" >&2
  exit 77
fi
PATH=$PATH:/usr/sbin
stop
rm -rf "$dir"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir" "$dir/munge"
host=$(hostname -s)

mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"

cat >"$dir/slurm.conf" <<EOF
ClusterName=strand-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=300
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=16 RealMemory=8192 State=UNKNOWN
PartitionName=strand Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=tiny Nodes=$host MaxTime=INFINITE State=UP MaxCPUsPerNode=1 MaxMemPerNode=100
EOF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N "$host"

# Up once the node takes jobs.
for _ in $(seq 100); do
  if state=$(sinfo -h -N -o %t 2>/dev/null | sort -u) && [ "$state" = idle ]; then
    cat >"$dir/env" <<EOF
SLURM_CONF=$SLURM_CONF
STRAND_TEST_SLURM=1
EOF
    echo "$dir/env"
    exit 0
  fi
  sleep 0.2
done
echo "the Slurm node did not come up (state: ${state:-none}); slurmctld's log ends:" >&2
tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
stop
exit 1
