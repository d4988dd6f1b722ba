#!/bin/bash
# A/B of two option sets over TCP loopback, interleaved so the machine's drift hits both alike
# (runs on this VM spread 20-30 % minute to minute: a median of many interleaved pairs is the
# only fair comparison). One file of MIB MiB in /dev/shm, pulled (or pushed) REPEATS times per
# side; side A against `rcpd $A_D` with `rcp $A_C`, side B against `rcpd $B_D` with `rcp $B_C`
# (two daemons, one per side, started once). Prints one line per run and the medians: MB/s
# (wall, process start to exit), rcp's CPU-s (/usr/bin/time) and rcpd's (/proc/PID/stat).
#   A_D="--hash-threads 1" A_C="--hash-threads 1" bash bench/ab_tcp.sh [BUILD] [pull|push] [MIB] [REPEATS]
# (defaults: build pull 1024 10). Ports 18510-18513, away from bench/run's and the others'.
set -eu
build=${1:-build} dir=${2:-pull} mib=${3:-1024} repeats=${4:-10}
. "$(dirname "$0")/lib.sh"   # hold_page_reporting: see there and bench/README.md
RCP=$(cd "$build/rcp" && pwd)/rcp RCPD=$(cd "$build/rcpd" && pwd)/rcpd
bench_scratch ab   # sets w (lib.sh)
one_file_setup "$w" "$mib"
cp "$w/src.bin" "$w/exp/src.bin"
# shellcheck disable=SC2086  # the option sets are word lists
"$RCPD" --transport tcp --listen 127.0.0.1:18511 -P 18510 --export b="$w/exp" ${A_D:-} > "$w/a.log" 2>&1 & pa=$!; BG_PIDS+=("$pa")
# shellcheck disable=SC2086
"$RCPD" --transport tcp --listen 127.0.0.1:18513 -P 18512 --export b="$w/exp" ${B_D:-} > "$w/b.log" 2>&1 & pb=$!; BG_PIDS+=("$pb")
for _ in $(seq 100); do grep -q "rcpd: ready" "$w/a.log" && grep -q "rcpd: ready" "$w/b.log" && break; sleep 0.05; done
tck=$(getconf CLK_TCK)
dcpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
for _ in $(seq "$repeats"); do
  for side in A B; do
    if [ $side = A ]; then pid=$pa port=18511 opts=${A_C:-}; else pid=$pb port=18513 opts=${B_C:-}; fi
    rm -f "$w/down/src.bin" "$w/exp/up.bin"
    c0=$(dcpu "$pid") t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    if [ "$dir" = pull ]; then
      /usr/bin/time -f "%U %S" -o "$w/t" "$RCP" --transport tcp --tcp-port "$port" $opts "127.0.0.1:b/src.bin" "$w/down/"
    else
      /usr/bin/time -f "%U %S" -o "$w/t" "$RCP" --transport tcp --tcp-port "$port" $opts "$w/src.bin" "127.0.0.1:b/up.bin"
    fi
    t1=$(date +%s.%N) c1=$(dcpu "$pid")
    echo "$side $(echo "$mib * 1.048576 / ($t1 - $t0)" | bc -l | cut -d. -f1) $(awk '{print $1 + $2}' "$w/t") $(echo "$c1 - $c0" | bc -l)"
  done
done | tee "$w/runs"
for side in A B; do
  printf '%s %s: median %s MB/s, rcp %s CPU-s, rcpd %s CPU-s (%s runs)\n' "$side" "$dir" \
    "$(awk -v s=$side '$1 == s {print $2}' "$w/runs" | med)" "$(awk -v s=$side '$1 == s {print $3}' "$w/runs" | med)" \
    "$(awk -v s=$side '$1 == s {print $4}' "$w/runs" | med)" "$(grep -c "^$side " "$w/runs")"
done
