#!/usr/bin/env bash
# A one-host Slurm cluster for the test suite, from Debian's slurmctld, slurmd and munge:
# controller and compute node on this machine at 127.0.0.1, on free ports, every file
# (config, keys, state, logs, sockets) in one folder the caller gives, every daemon stopped
# by its pid. Nothing under /etc or /run is touched, so it runs beside a real cluster.
#   one_host_cluster.sh start DIR [CPUS]   prints the SLURM_CONF to export, once the node is
#                                          idle (CPUS: the node's, default every core)
#   one_host_cluster.sh stop DIR    stops the daemons started in DIR
# Needs root (slurmd runs jobs as their user) or a user who may run the daemons.
set -euo pipefail

what=${1:?usage: one_host_cluster.sh start|stop DIR}
dir=$(realpath -m "${2:?usage: one_host_cluster.sh start|stop DIR}")

stop() {
  for d in slurmd slurmctld munged; do
    if [[ -f "$dir/$d.pid" ]]; then
      pid=$(cat "$dir/$d.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$d.pid"
    fi
  done
}

if [[ "$what" == stop ]]; then
  stop
  exit 0
fi
[[ "$what" == start ]] || { echo "usage: one_host_cluster.sh start|stop DIR" >&2; exit 2; }

for tool in munged slurmctld slurmd sbatch sinfo; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null || {
    echo "one_host_cluster: $tool is missing (apt-get install slurmctld slurmd slurm-client munge;" \
      "scripts/deps.sh test installs them)" >&2
    exit 3
  }
done

mkdir -p "$dir"/{state,spool,log}
chmod 700 "$dir"
# munge: a key of its own, a socket of its own
head -c 1024 /dev/urandom > "$dir/munge.key"
chmod 600 "$dir/munge.key"
munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed" 2>>"$dir/log/munged.log"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port)
node_port=$(free_port)
while [[ "$node_port" == "$ctld_port" ]]; do node_port=$(free_port); done
host=$(hostname -s)
cpus=${3:-$(nproc)}
user=$(id -un)

cat > "$dir/slurm.conf" <<CONF
ClusterName=tethertest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$node_port
SlurmUser=$user
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=tethernode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=tether Nodes=tethernode Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"

# -i: ignore any state a previous cluster left in the folder
slurmctld -i -f "$SLURM_CONF" >>"$dir/log/slurmctld.out" 2>&1
slurmd -N tethernode -f "$SLURM_CONF" >>"$dir/log/slurmd.out" 2>&1

for _ in $(seq 300); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.1
done
echo "one_host_cluster: the node did not come up idle within 30 s; logs in $dir/log" >&2
sinfo -N 2>&1 >&2 || true
tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2 2>/dev/null || true
stop
exit 1
