#!/bin/bash
# Issue 15: the sharded copy as a real Slurm job array on one node. Starts munged, slurmctld
# and slurmd on localhost (own config, state, sockets and ports under a work directory; the
# system's Slurm and munge configuration are not touched), one rcpd over TCP, submits the
# shipped packaging/examples/slurm-shards.sbatch with `sbatch --array=0-3 --wait`, and checks
# that the union of the shards is the source, every file was copied once (files_transferred
# sums to the file count) and rcp-merge-reports' totals add up; then stops everything.
# Without Slurm (Debian slurm-wlm and munge: scripts/install-deps.sh) or when its daemons do
# not come up here, it prints a loud SKIPPING line and exits 77 (ctest: skipped), never 0.
#
# usage: shard_slurm.sh --bin DIR [--work DIR]       (as root: slurmd runs the tasks as root)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args shard_slurm "$@"
top=$(cd "$(dirname "$0")/../.." && pwd)
RCP=$(cd "$bin/../rcp" 2>/dev/null && pwd)/rcp; [ -x "$RCP" ] || RCP=$bin/rcp
RCPD=$(cd "$bin/../rcpd" 2>/dev/null && pwd)/rcpd; [ -x "$RCPD" ] || RCPD=$bin/rcpd
MERGE=$top/packaging/rcp-merge-reports
skip() { echo "SKIPPING shard_slurm: $* -- the Slurm job array was NOT tested"; exit 77; }
for p in slurmctld slurmd sbatch squeue scontrol munged; do
  command -v "$p" > /dev/null || skip "$p not installed (scripts/install-deps.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs the job's tasks as the submitting user, from a root daemon)"
[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-slurm.XXXXXX)
chmod 755 "$work"
# Below the kernel's ephemeral ports (32768-60999), away from the other suites.
base=$(( 32650 + ($$ % 25) * 4 ))
rport=$base tport=$((base + 1)) ctlport=$((base + 2)) dport=$((base + 3))
pids=()
export SLURM_CONF=$work/slurm.conf
cleanup() {
  scontrol shutdown > /dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ -f "$work/munged.pid" ] && kill -TERM "$(cat "$work/munged.pid")" 2>/dev/null
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "shard_slurm: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- munge: its own key and socket
mkdir -p "$work/munge" && chmod 700 "$work/munge"
head -c 1024 /dev/urandom > "$work/munge/munge.key" && chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.sock" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge/seed" \
  > "$work/munged.out" 2>&1 || skip "munged did not start: $(tail -n 2 "$work/munged.out" "$work/munged.log" 2>/dev/null | tr '\n' ' ')"

# --- slurm: one node (this host), one partition, no accounting, no cgroups
host=$(hostname -s)
mkdir -p "$work/state" "$work/spool"
cat > "$SLURM_CONF" <<CONF
ClusterName=rcptest
SlurmctldHost=$host
SlurmctldPort=$ctlport
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=rcp Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
slurmctld -D -i > "$work/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D > "$work/slurmd.out" 2>&1 & pids+=($!)
up=
for _ in $(seq 150); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then up=1; break; fi
  sleep 0.2
done
[ -n "$up" ] || skip "slurmctld/slurmd did not bring node $host up in 30 s: $(tail -n 3 "$work/slurmctld.log" "$work/slurmd.log" "$work"/*.out 2>/dev/null | tr '\n' ' ')"
ok "single-node Slurm up (munged, slurmctld, slurmd on $host)"

# --- rcpd and the tree: 400 files in 8 directories
exp=$work/export src=$work/src/tree
mkdir -p "$exp" "$src"
"$RCPD" --listen "127.0.0.1:$tport" -P "$rport" --transport tcp --export data="$exp" -v > "$work/rcpd.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/rcpd.log" 2>/dev/null && break; sleep 0.05; done
for d in $(seq 0 7); do
  mkdir -p "$src/d$d"
  for f in $(seq 0 49); do head -c $(( (d * 50 + f) * 211 % 30000 )) /dev/urandom > "$src/d$d/f$f"; done
done
(cd "$src" && find . -type f -print0) > "$work/list"
chmod -R a+rX "$work"

# --- the job array, as a user submits it
sbatch --array=0-3 --wait --chdir="$work" \
  --export=ALL,SRC="$src",LIST="$work/list",DEST=127.0.0.1:data/job,REPORTS="$work/reports",RCP="$RCP",RCP_OPTIONS="--transport tcp -P $rport --tcp-port $tport" \
  "$top/packaging/examples/slurm-shards.sbatch" > "$work/sbatch.out" 2>&1; rc=$?
check "sbatch --array=0-3 --wait slurm-shards.sbatch: exit 0 (exit $rc: $(tr '\n' ' ' < "$work/sbatch.out"))" test $rc = 0
check "  ... 4 reports, one per array task" test "$(ls "$work/reports" 2>/dev/null | wc -l)" = 4
check "  ... the union of the shards is the source" diff -r "$src" "$exp/job"
"$MERGE" "$work"/reports/*.json > "$work/merged.json"; rc=$?
check "  ... rcp-merge-reports: exit 0, 4 of 4 shards, 400 files transferred once (exit $rc)" \
  test $rc = 0 -a "$(jq -c '[.shards, .missing_shards, .files_transferred, .files_failed]' "$work/merged.json" 2>/dev/null)" = '[4,[],400,0]'
bytes=$(find "$src" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
check "  ... merged bytes_transferred is the source's $bytes" test "$(jq .bytes_transferred "$work/merged.json")" = "$bytes"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
