#!/bin/bash
# Updating an existing destination (issue 10): CPU-seconds (user+sys of rcp and rcpd together)
# and wall time of one push over TCP loopback, next to rsync on the same files.
#   1. a tree of N × 4 KiB files, unchanged since the last copy (quick check: nothing moves);
#   2. a MIB MiB file with one byte changed (and its mtime): chunk reuse vs --whole-file, and
#      rsync's delta transfer (rsync --no-whole-file, local: its sender and receiver processes);
#   3. a MIB MiB file rewritten entirely: the worst case of chunk reuse (the old file is read and
#      hashed for nothing) vs --whole-file.
# usage: bench/update.sh [BUILD_DIR]   (env: N=10000 MIB=256 PORT=18490)
# CPU-seconds, not wall time, are what to compare on a loaded machine; `uptime` is printed.
set -eu
b=${1:-build}; b=$(cd "$b" && pwd)
N=${N:-10000} MIB=${MIB:-256} PORT=${PORT:-18490}
w=$(mktemp -d /tmp/rcp-update-bench.XXXXXX)
trap 'kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; rm -rf "$w"' EXIT
mkdir -p "$w/src/tree" "$w/exp" "$w/rs"
"$b/rcpd/rcpd" --listen 127.0.0.1:$((PORT + 1)) -P "$PORT" --transport tcp --export data="$w/exp" 2> "$w/rcpd.log" &
dpid=$!
sleep 0.5
cpu_of() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # clock ticks, user + sys
tck=$(getconf CLK_TCK)
# measure NAME CMD...: wall s, client CPU s + daemon CPU s
measure() {
  local name=$1; shift
  local d0 t0 t1 d1
  d0=$(cpu_of "$dpid")
  t0=$(date +%s.%N)
  /usr/bin/time -f '%U %S' -o "$w/time" "$@" > "$w/out" 2> "$w/err" || { echo "$name failed:"; cat "$w/err"; }
  t1=$(date +%s.%N)
  d1=$(cpu_of "$dpid")
  read -r u s < <(tail -1 "$w/time")
  printf '| %s | %.2f | %.2f | %s |\n' "$name" "$(echo "$t1 - $t0" | bc)" \
    "$(echo "$u + $s + ($d1 - $d0) / $tck" | bc -l)" "$(grep -o '"bytes_transferred":[0-9]*' "$w/out" | cut -d: -f2)"
}
R=("$b/rcp/rcp" --transport tcp -P "$PORT" --tcp-port $((PORT + 1)) --no-progress)
for i in $(seq "$N"); do head -c 4096 /dev/urandom > "$w/src/tree/f$i"; done
head -c $((MIB * 1048576)) /dev/urandom > "$w/src/big"
echo "load: $(uptime)"
echo "| case | wall s | CPU s (both sides) | rcp bytes_transferred |"
echo "|---|---|---|---|"
"${R[@]}" -r "$w/src/tree" 127.0.0.1:data/ > /dev/null
rsync -rt "$w/src/tree" "$w/rs/"
measure "rcp -r, $N × 4 KiB unchanged" "${R[@]}" -r --json "$w/src/tree" 127.0.0.1:data/
measure "rsync -rt (local), $N × 4 KiB unchanged" rsync -rt "$w/src/tree" "$w/rs/"
"${R[@]}" "$w/src/big" 127.0.0.1:data/big > /dev/null
cp "$w/src/big" "$w/rs/big"
printf 'x' | dd of="$w/src/big" bs=1 seek=$((MIB * 1048576 / 3)) conv=notrunc status=none
touch -d '2020-01-01' "$w/src/big"
cp "$w/exp/big" "$w/exp/big.orig"
measure "rcp, $MIB MiB, 1 byte changed (chunk reuse)" "${R[@]}" --json "$w/src/big" 127.0.0.1:data/big
cp "$w/exp/big.orig" "$w/exp/big"
measure "rcp -W, $MIB MiB, 1 byte changed" "${R[@]}" -W --json "$w/src/big" 127.0.0.1:data/big
measure "rsync --no-whole-file (local), $MIB MiB, 1 byte changed" rsync -t --no-whole-file "$w/src/big" "$w/rs/big"
head -c $((MIB * 1048576)) /dev/urandom > "$w/src/big"
cp "$w/exp/big.orig" "$w/exp/big"
measure "rcp, $MIB MiB, every byte changed (chunk reuse)" "${R[@]}" --json "$w/src/big" 127.0.0.1:data/big
cp "$w/exp/big.orig" "$w/exp/big"
measure "rcp -W, $MIB MiB, every byte changed" "${R[@]}" -W --json "$w/src/big" 127.0.0.1:data/big
echo "load: $(uptime)"
