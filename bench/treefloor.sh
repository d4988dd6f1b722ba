#!/bin/bash
# The floor under a verified, atomic copy of many small files, beside tar | nc | tar x and
# rcp -r: N files of 4 KiB pushed from /dev/shm over 127.0.0.1 into /dev/shm, the rows
# interleaved (one run of each, then the next round) so the machine's drift hits all alike.
#
#   bash bench/treefloor.sh [FILES] [ROUNDS]     # default 10000 files, 7 rounds
#   BUILD=build-other bash bench/treefloor.sh    # another build directory (default build)
#   ROWS="tarnc treepipe rcp" bash bench/treefloor.sh
#
# Rows (bench/treepipe.cc says what treepipe does and leaves out):
#   tarnc          tar c | nc -N  →  nc -l | tar x     bench/run's anchor, four processes
#   treepipe       treepipe send  →  treepipe recv      verified + atomic, one process a side
#   treepipe-nc    treepipe send - | nc → nc -l | treepipe recv -    the same, four processes
#   direct-nc      as treepipe-nc, files created under their names (tar x's calls + digest)
#   rcp            rcp -r --transport tcp to an rcpd started once
# Prints each run and the medians: wall ms (first process started to last exited), the
# sending side's and the receiving side's CPU in ms (perf stat task-clock over each side's
# processes; rcpd's from /proc/PID/stat). Free page reporting held (bench/lib.sh).
# Ports 18595-18597.
set -eu -o pipefail
files=${1:-10000} runs=${2:-7}
. "$(dirname "$0")/lib.sh"
bench_bins treefloor.sh perf nc tar
tp=$(cd "${BUILD:-build}" && pwd)/bench/treepipe
[ -x "$tp" ] || { echo "treefloor.sh: needs $tp (the build's bench/)" >&2; exit 2; }
nc -h 2>&1 | grep -q -- '-N' || { echo "treefloor.sh: needs netcat-openbsd (nc -N)" >&2; exit 2; }
bench_scratch tf   # sets w (lib.sh)
mkdir -p "$w/exp" "$w/src/small"
(cd "$w/src/small" && head -c $((files * 4096)) /dev/urandom | split -b 4K -a 5 -d - f)
head -c $((1 << 30)) /dev/zero > "$w/warm" && rm -f "$w/warm"   # pages reported before the hold
"$rcpd" --transport tcp --listen 127.0.0.1:18596 -P 18595 --export b="$w/exp" > "$w/rcpd.log" 2>&1 & dpid=$!; BG_PIDS+=("$dpid")
rcpd_ready treefloor.sh "$w/rcpd.log"

ms() { grep task-clock "$1" | cut -d, -f1 | cut -d. -f1; }
proc_ms() { proc_cpu "$1"; echo $(( REPLY * 1000 / CLK_TCK )); }
listening() { for _ in $(seq 200); do ss -ltn | grep -q ":$1 " && return 0; sleep 0.01; done; return 1; }
read -r -a rows <<< "${ROWS:-tarnc treepipe treepipe-nc direct-nc rcp}"
for row in "${rows[@]}"; do
  case $row in tarnc | treepipe | treepipe-nc | direct-nc | rcp) ;; *) echo "treefloor.sh: no row '$row'" >&2; exit 2 ;; esac
done
dst=$w/exp/sd/small
for _ in $(seq "$runs"); do
  for row in "${rows[@]}"; do
    rm -rf "$w/exp/sd" && mkdir -p "$dst"
    case $row in
      rcp)
        rmdir "$dst"
        c0=$(proc_ms "$dpid") t0=$(date +%s.%N)
        perf stat -x, -e task-clock -o "$w/send" -- "$rcp" --transport tcp --tcp-port 18596 -r "$w/src/small" 127.0.0.1:b/sd/
        t1=$(date +%s.%N) c1=$(proc_ms "$dpid")
        recv=$(( c1 - c0 )) ;;
      *)
        case $row in
          tarnc) rx="nc -l -d 127.0.0.1 18597 | tar x -C '$dst'"
                 tx="tar c -C '$w/src/small' . | nc -N 127.0.0.1 18597" ;;
          treepipe) rx="'$tp' recv '$dst' 18597"
                    tx="'$tp' send '$w/src/small' 127.0.0.1 18597" ;;
          treepipe-nc) rx="nc -l -d 127.0.0.1 18597 | '$tp' recv '$dst' -"
                       tx="'$tp' send '$w/src/small' - | nc -N 127.0.0.1 18597" ;;
          direct-nc) rx="nc -l -d 127.0.0.1 18597 | '$tp' recv '$dst' - direct"
                     tx="'$tp' send '$w/src/small' - | nc -N 127.0.0.1 18597" ;;
        esac
        perf stat -x, -e task-clock -o "$w/recv" -- bash -c "$rx" & rpid=$!
        listening 18597 || { echo "treefloor.sh: $row's receiver did not listen" >&2; exit 1; }
        t0=$(date +%s.%N)
        perf stat -x, -e task-clock -o "$w/send" -- bash -c "$tx"
        wait "$rpid"; t1=$(date +%s.%N)
        recv=$(ms "$w/recv") ;;
    esac
    diff -rq "$w/src/small" "$dst" > /dev/null || { echo "treefloor.sh: $row did not arrive whole" >&2; exit 1; }
    echo "$row $(echo "($t1 - $t0) * 1000" | bc -l | cut -d. -f1) $(ms "$w/send") $recv"
  done
done | tee "$w/runs"
echo "| row | wall ms | files/s | sending side ms CPU | receiving side ms CPU |"
echo "|---|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  col() { awk -v r="$row" -v c="$1" '$1 == r {print $c}' "$w/runs" | med; }
  echo "| $row | $(col 2) | $(( files * 1000 / $(col 2) )) | $(col 3) | $(col 4) |"
done
echo "($runs rounds of $files x 4 KiB, medians; $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
