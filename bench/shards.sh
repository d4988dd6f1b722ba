#!/bin/bash
# Aggregate rate of a sharded push (rcp --shard I/N, issue 15): one tree of FILES random files
# of KIB KiB each in /dev/shm pushed to one rcpd over TCP on 127.0.0.1 (/dev/shm -> /dev/shm,
# so no disk is measured) as 1, 2 and 4 shards run at once, each shard its own rcp process,
# as N hosts would run them. Per row: the wall time until the last shard ends, the aggregate
# MB/s (bytes over that time, from rcp-merge-reports), and the CPU-seconds per GiB of the rcp
# processes (/usr/bin/time) and of rcpd (/proc/PID/stat around the job). Every shard count
# starts from an empty destination; the union is checked against the source.
#   bash bench/shards.sh [BUILD_DIR] [FILES] [KIB] [REPEATS]   (defaults: build 256 2048 1)
# Ports 18500 (rdma_cm, unused) and 18501 (TCP), away from bench/run's and the other scripts'.
# On one host the shards share its cores and its loopback: the figures say how far one
# machine's copy scales with processes, not what N hosts give (each has its own NIC).
set -eu
build=${1:-build} files=${2:-256} kib=${3:-2048} repeats=${4:-1}
top=$(cd "$(dirname "$0")/.." && pwd)
RCP=$(cd "$build/rcp" && pwd)/rcp RCPD=$(cd "$build/rcpd" && pwd)/rcpd
MERGE=$top/packaging/rcp-merge-reports
w=$(mktemp -d /dev/shm/rcp-shards.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -TERM $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$w"' EXIT
mkdir -p "$w/src" "$w/exp"
for i in $(seq 1 "$files"); do head -c $((kib << 10)) /dev/urandom > "$w/src/f$i"; done
(cd "$w/src" && ls) > "$w/list"
"$RCPD" --listen 127.0.0.1:18501 -P 18500 --transport tcp --export b="$w/exp" > "$w/rcpd.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$w/rcpd.log" && break; sleep 0.05; done
tck=$(getconf CLK_TCK)
dcpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$dpid/stat"; }
gib=$(echo "$files * $kib / 1048576" | bc -l)
printf '| %d x %d KiB push, TCP loopback, mean of %d | wall s | aggregate MB/s | rcp CPU-s/GiB | rcpd CPU-s/GiB |\n|---|---|---|---|---|\n' \
  "$files" "$kib" "$repeats"
for n in 1 2 4; do
  : > "$w/rows"
  for _ in $(seq "$repeats"); do
    rm -rf "$w/exp/t" "$w"/r*.json "$w"/cpu*
    d0=$(dcpu)
    t0=$(date +%s.%N)
    for i in $(seq 0 $((n - 1))); do
      /usr/bin/time -o "$w/cpu$i" -f '%U %S' "$RCP" --transport tcp -P 18500 --tcp-port 18501 --shard "$i/$n" \
        --files-from "$w/list" --json "$w/src" 127.0.0.1:b/t > "$w/r$i.json" 2> "$w/err$i" &
    done
    wait $(jobs -p | grep -v "^$dpid$") 2>/dev/null || true
    t1=$(date +%s.%N)
    d1=$(dcpu)
    diff -r "$w/src" "$w/exp/t" > /dev/null || { echo "shards.sh: $n shards: the copy differs" >&2; cat "$w"/err*; exit 1; }
    "$MERGE" "$w"/r*.json > "$w/merged.json" || { echo "shards.sh: $n shards: a shard failed" >&2; cat "$w/merged.json"; exit 1; }
    c=$(cat "$w"/cpu* | awk '{s += $1 + $2} END {print s}')
    echo "$(echo "$t1 - $t0" | bc -l) $(jq .bytes_transferred "$w/merged.json") $c $(echo "$d1 - $d0" | bc -l)" >> "$w/rows"
  done
  awk -v n="$n" -v g="$gib" '{w += $1; b += $2; c += $3; d += $4; k++}
    END {printf "| %d shard%s | %.2f | %.0f | %.2f | %.2f |\n", n, (n > 1 ? "s" : ""), w/k, b/w/1e6, c/k/g, d/k/g}' "$w/rows"
done
printf '\n(%s, %s cores, load %s before the run ended, %s)\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
  "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$(git -C "$top" rev-parse --short HEAD)"
