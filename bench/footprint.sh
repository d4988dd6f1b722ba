#!/bin/bash
# What the sending end's memory footprint costs, rcp's and socat's side by side: pushes of
# one SIZE MiB file from /dev/shm over 127.0.0.1 into /dev/shm, interleaved (one run of each
# row, then the next round) so the machine's drift hits every row alike.
#
#   bash bench/footprint.sh [SIZE_MIB] [RUNS]      # default 1024 MiB, 5 rounds
#   BUILD=build-other bash bench/footprint.sh      # another build directory (default build)
#   ROWS="socat-1M hashpipe rcp" bash bench/footprint.sh   # the rows to run (default: below)
#
# Rows: socat-1M, socat -b 1 MiB (bench/run's anchor: the sender reads 1 MiB and sends it
# while it is still in the cache); socat-16M, the same program walking through 16 MiB, the
# size of rcp's default pool (window 16 x 1 MiB chunks); rcp with its defaults; rcp-window4,
# rcp --window 4; hashpipe (not by default), socat's loop plus rcp's xxh128 of every 1 MiB
# chunk at both ends, the receiver writing only verified bytes to a temp file renamed at
# the end (bench/hashpipe.cc): the floor under a verified copy.
# Prints each run and the medians: wall MB/s (client start to exit), the sending end's CPU
# (perf stat task-clock) and the receiving end's (socat's task-clock; rcpd's /proc/PID/stat),
# in ms. Free page reporting is held as in bench/lib.sh. Ports 18580-18582.
set -eu -o pipefail
size=${1:-1024} runs=${2:-5}
. "$(dirname "$0")/lib.sh"
bench_bins footprint.sh perf socat   # sets rcp, rcpd (lib.sh)
bench_scratch fp   # sets w (lib.sh)
one_file_setup "$w" "$size"
"$rcpd" --transport tcp --listen 127.0.0.1:18581 -P 18580 --export b="$w/exp" > "$w/rcpd.log" 2>&1 & dpid=$!; BG_PIDS+=("$dpid")
rcpd_ready footprint.sh "$w/rcpd.log"

ms() { grep task-clock "$1" | cut -d, -f1 | cut -d. -f1; }
proc_ms() { proc_cpu "$1"; echo $(( REPLY * 1000 / CLK_TCK )); }
read -r -a rows <<< "${ROWS:-socat-1M socat-16M rcp rcp-window4}"
hashpipe=$(cd "${BUILD:-build}" && pwd)/bench/hashpipe
for row in "${rows[@]}"; do
  case $row in
    socat-*M | rcp | rcp-window4) ;;
    hashpipe) [ -x "$hashpipe" ] || { echo "footprint.sh: needs $hashpipe (the build's bench/)" >&2; exit 2; } ;;
    *) echo "footprint.sh: no row '$row'" >&2; exit 2 ;;
  esac
done
for _ in $(seq "$runs"); do
  for row in "${rows[@]}"; do
    rm -f "$w/exp/up.bin" "$w/down/out.bin"
    case $row in
      socat-*)
        b=${row#socat-} && b=$(( ${b%M} << 20 ))
        perf stat -x, -e task-clock -o "$w/recv" -- socat -u -b "$b" TCP-LISTEN:18582,reuseaddr \
          "OPEN:$w/down/out.bin,creat,trunc" & rpid=$!
        for _ in $(seq 100); do ss -ltn | grep -q ':18582 ' && break; sleep 0.02; done
        t0=$(date +%s.%N)
        perf stat -x, -e task-clock -o "$w/send" -- socat -u -b "$b" "OPEN:$w/src.bin" TCP:127.0.0.1:18582
        wait "$rpid"; t1=$(date +%s.%N)
        out=$w/down/out.bin recv=$(ms "$w/recv") ;;
      hashpipe)
        perf stat -x, -e task-clock -o "$w/recv" -- "$hashpipe" recv "$w/down/out.bin" 18582 & rpid=$!
        for _ in $(seq 100); do ss -ltn | grep -q ':18582 ' && break; sleep 0.02; done
        t0=$(date +%s.%N)
        perf stat -x, -e task-clock -o "$w/send" -- "$hashpipe" send "$w/src.bin" 127.0.0.1 18582
        wait "$rpid"; t1=$(date +%s.%N)
        out=$w/down/out.bin recv=$(ms "$w/recv") ;;
      rcp*)
        opts=() && [ "$row" = rcp-window4 ] && opts=(--window 4)
        c0=$(proc_ms "$dpid") t0=$(date +%s.%N)
        perf stat -x, -e task-clock -o "$w/send" -- "$rcp" "${opts[@]}" --transport tcp --tcp-port 18581 \
          "$w/src.bin" 127.0.0.1:b/up.bin
        t1=$(date +%s.%N) c1=$(proc_ms "$dpid")
        out=$w/exp/up.bin recv=$(( c1 - c0 )) ;;
    esac
    cmp -s "$w/src.bin" "$out" || { echo "footprint.sh: $row did not arrive whole" >&2; exit 1; }
    echo "$row $(echo "$size * 1.048576 / ($t1 - $t0)" | bc -l | cut -d. -f1) $(ms "$w/send") $recv"
  done
done | tee "$w/runs"
echo "| row | MB/s | sender ms CPU | receiver ms CPU |"
echo "|---|---:|---:|---:|"
for row in "${rows[@]}"; do
  col() { awk -v r="$row" -v c="$1" '$1 == r {print $c}' "$w/runs" | med; }
  echo "| $row | $(col 2) | $(col 3) | $(col 4) |"
done
echo "($runs rounds of $size MiB, medians; $(date -u +%FT%TZ))"
