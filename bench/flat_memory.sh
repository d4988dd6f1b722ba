#!/bin/bash
# Peak RSS (KiB, /usr/bin/time -f %M) of rcp and rcpd for a push and a pull of
# a tree of N small files, both on tmpfs, over TCP on loopback.
# usage: bench/flat_memory.sh BIN_DIR_WITH_rcp_AND_rcpd TREE [PORT_BASE]
# (BIN_DIR may be a build directory: rcp/rcp and rcpd/rcpd are looked for too)
# Prints: files client_push rcpd_push client_pull rcpd_pull   (KiB)
# RCP_EXTRA="--delete" adds options to both copies.
set -eu
bin=$1 tree=$2 base=${3:-$(( 30000 + $$ % 20000 ))}
rcp=$bin/rcp; [ -f "$rcp" ] && [ ! -d "$rcp" ] || rcp=$bin/rcp/rcp
rcpd=$bin/rcpd; [ -f "$rcpd" ] && [ ! -d "$rcpd" ] || rcpd=$bin/rcpd/rcpd
work=$(mktemp -d /dev/shm/rcp-mem.XXXXXX)
trap 'kill $dpid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/exp" "$work/pulled"
n=$(find "$tree" -type f | wc -l)
daemon() {  # starts rcpd under /usr/bin/time; its peak goes to $work/d.$1
  /usr/bin/time -f %M -o "$work/d.$1" "$rcpd" --listen "127.0.0.1:$((base + 1))" -P "$base" --transport tcp \
    --export data="$work/exp" 2> "$work/dlog.$1" &
  dpid=$!
  for _ in $(seq 200); do grep -q "rcpd: ready" "$work/dlog.$1" 2>/dev/null && return; sleep 0.05; done
  echo "rcpd did not start" >&2; exit 1
}
stop() { kill -TERM $(pgrep -P $dpid rcpd) 2>/dev/null || true; wait $dpid 2>/dev/null || true; }
daemon push
/usr/bin/time -f %M -o "$work/c.push" "$rcp" -q ${RCP_EXTRA:-} --transport tcp -P "$base" --tcp-port $((base + 1)) -r "$tree" "127.0.0.1:data/"
stop
daemon pull
/usr/bin/time -f %M -o "$work/c.pull" "$rcp" -q ${RCP_EXTRA:-} --transport tcp -P "$base" --tcp-port $((base + 1)) -r "127.0.0.1:data/$(basename "$tree")" "$work/pulled/"
stop
[ "$(find "$work/pulled" -type f | wc -l)" = "$n" ] || { echo "pull incomplete" >&2; exit 1; }
echo "$n $(tail -1 "$work/c.push") $(tail -1 "$work/d.push") $(tail -1 "$work/c.pull") $(tail -1 "$work/d.pull")"
