#!/bin/bash
# A/B of two builds of rcp + rcpd over TCP loopback, interleaved (A, B, A, B, ...) so the
# machine's drift hits both alike: what a code change does, measured before it is kept.
#
#   A=DIR_A B=DIR_B bash bench/ab_builds.sh [push|pull] [big|small|args] [SIZE] [REPEATS]
#   A=build B=build OPTS_B="--window 4" bash bench/ab_builds.sh ...   # one build, two option sets
#   SCRATCH=/var/tmp OPTS_A=--fsync OPTS_B=--fsync A=... B=... bash bench/ab_builds.sh push small 2000
#       # on another file system than /dev/shm (bench/lib.sh bench_scratch)
#
# DIR: a build directory (DIR/rcp/rcp, DIR/rcpd/rcpd) or a directory holding both binaries
# (cp build/rcp/rcp build/rcpd/rcpd /tmp/before/, say, before rebuilding).
# big: one file of SIZE MiB (default 1024); small: rcp -r of SIZE files of 4 KiB (default
# 10000); args: those files pushed named as arguments (cd SRC && rcp f00000 ... DEST/, the
# destination directory made beforehand, as bench/run's row). /dev/shm to /dev/shm, one rcpd per side started once; free page reporting held
# (bench/lib.sh). Prints each run and the medians: wall (MB/s or ms, client start to exit),
# the client's task-clock (perf stat) and the daemon's CPU (/proc/PID/stat), in ms.
# Ports 18560-18563.
set -eu
dir=${1:-push} kind=${2:-big} repeats=${4:-6}
[ "$kind" = big ] && size=${3:-1024} || size=${3:-10000}
: "${A:?A=build dir or binaries dir}" "${B:?B=build dir or binaries dir}"
bin() { if [ -x "$1/rcp/rcp" ]; then echo "$(cd "$1" && pwd)/rcp/rcp $(cd "$1" && pwd)/rcpd/rcpd"; else echo "$(cd "$1" && pwd)/rcp $(cd "$1" && pwd)/rcpd"; fi; }
read -r rcp_a rcpd_a <<< "$(bin "$A")"
read -r rcp_b rcpd_b <<< "$(bin "$B")"
command -v perf > /dev/null || { echo "ab_builds.sh: needs perf (linux-perf)" >&2; exit 2; }
. "$(dirname "$0")/lib.sh"
bench_scratch abb   # sets w (lib.sh)
mkdir -p "$w/exp" "$w/down" "$w/small"
if [ "$kind" = big ]; then
  head -c $((size << 20)) /dev/urandom > "$w/src.bin"; cp "$w/src.bin" "$w/exp/src.bin"
  head -c $((2 * size << 20)) /dev/zero > "$w/warm" && rm -f "$w/warm"   # pages reported before the hold
else
  (cd "$w/small" && head -c $((size * 4096)) /dev/urandom | split -b 4K -a 5 -d - f)
  cp -r "$w/small" "$w/exp/small"
  head -c $((1 << 30)) /dev/zero > "$w/warm" && rm -f "$w/warm"
fi
"$rcpd_a" --transport tcp --listen 127.0.0.1:18561 -P 18560 --export b="$w/exp" > "$w/a.log" 2>&1 & pa=$!; BG_PIDS+=("$pa")
"$rcpd_b" --transport tcp --listen 127.0.0.1:18563 -P 18562 --export b="$w/exp" > "$w/b.log" 2>&1 & pb=$!; BG_PIDS+=("$pb")
for _ in $(seq 100); do grep -q "rcpd: ready" "$w/a.log" && grep -q "rcpd: ready" "$w/b.log" && break; sleep 0.05; done
tck=$(getconf CLK_TCK)
dcpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$1/stat"; }
for _ in $(seq "$repeats"); do
  for side in A B; do
    if [ $side = A ]; then pid=$pa port=18561 rcp=$rcp_a opts=${OPTS_A:-}; else pid=$pb port=18563 rcp=$rcp_b opts=${OPTS_B:-}; fi
    rm -rf "$w/down/src.bin" "$w/exp/up.bin" "$w/down/small" "$w/exp/sd"
    cwd=.
    case "$dir.$kind" in
      pull.big) args=("127.0.0.1:b/src.bin" "$w/down/") ;;
      push.big) args=("$w/src.bin" "127.0.0.1:b/up.bin") ;;
      pull.small) args=(-r "127.0.0.1:b/small" "$w/down/") ;;
      push.small) args=(-r "$w/small" "127.0.0.1:b/sd/") ;;
      push.args) mkdir "$w/exp/sd"; cwd=$w/small; args=(); for f in "$w"/small/f*; do args+=("${f##*/}"); done; args+=("127.0.0.1:b/sd/") ;;
      *) echo "ab_builds.sh: push|pull and big|small, or push args" >&2; exit 2 ;;
    esac
    c0=$(dcpu "$pid") t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # OPTS_A/OPTS_B: several options, split on purpose
    (cd "$cwd" && perf stat -x, -e task-clock -o "$w/t" "$rcp" $opts --transport tcp --tcp-port "$port" "${args[@]}")
    t1=$(date +%s.%N) c1=$(dcpu "$pid")
    if [ "$kind" = big ]; then wall=$(echo "$size * 1.048576 / ($t1 - $t0)" | bc -l); else wall=$(echo "($t1 - $t0) * 1000" | bc -l); fi
    echo "$side ${wall%.*} $(grep task-clock "$w/t" | cut -d, -f1 | cut -d. -f1) $(echo "($c1 - $c0) * 1000" | bc -l | cut -d. -f1)"
  done
done | tee "$w/runs"
unit=$([ "$kind" = big ] && echo "MB/s" || echo "ms wall")
for side in A B; do
  printf '%s %s %s: median %s %s, rcp %s ms CPU, rcpd %s ms CPU (%s runs)\n' "$side" "$dir" "$kind" \
    "$(awk -v s=$side '$1 == s {print $2}' "$w/runs" | med)" "$unit" "$(awk -v s=$side '$1 == s {print $3}' "$w/runs" | med)" \
    "$(awk -v s=$side '$1 == s {print $4}' "$w/runs" | med)" "$(grep -c "^$side " "$w/runs")"
done
