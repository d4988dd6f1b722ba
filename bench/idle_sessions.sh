#!/bin/bash
# What a connected but silent session costs rcpd: N real rcp pulls of a 64 MiB file, each held
# by the daemon after its first chunk (RCP_TEST_FAULT source-hold: the session is open, its
# pool set up, and nothing moves — a client that connected and went quiet), then rcpd's
# resident memory, pinned memory, registered bytes and queue pairs, minus the same with no
# session, divided by N. Over RDMA in the soft-RoCE guest
# (tests/vm/rxe-run -- bash bench/idle_sessions.sh build rdma) or over TCP anywhere.
# usage: bench/idle_sessions.sh BUILD_DIR rdma|tcp [N...]   (default N: 1 4 16)
set -u
bin=${1:?usage: idle_sessions.sh BUILD_DIR rdma|tcp [N...]} transport=${2:?rdma or tcp}
shift 2
counts=${*:-1 4 16}
addr=127.0.0.1
[ "$transport" = rdma ] && addr=${RXE_ADDR_B:?the rdma run needs the soft-RoCE guest (tests/vm/rxe-run)}
port=$(( 30000 + $$ % 20000 ))
w=$(mktemp -d /dev/shm/rcp-idle.XXXXXX 2>/dev/null || mktemp -d /tmp/rcp-idle.XXXXXX)
mkdir -p "$w/export" "$w/back"
head -c $((64 << 20)) /dev/urandom > "$w/export/f.bin"
hold=$w/hold
# rcpd: default options (pool, queue depths, 2 data queue pairs and 1 for control a session)
RCP_TEST_FAULT=source-hold=$hold "$bin/rcpd/rcpd" --listen "$addr:$((port + 1))" -P "$port" --transport "$transport" \
    --export b="$w/export" 2> "$w/rcpd.log" &
dp=$!
trap 'rm -f "$hold"; kill $dp 2>/dev/null; wait 2>/dev/null; rm -rf "$w"' EXIT
for _ in $(seq 200); do grep -q "rcpd: ready" "$w/rcpd.log" && break; sleep 0.05; done
status() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$dp/status"; }  # KiB
# (the rdma tool names the thread that registered an MR, not the process: match rcpd's name,
# the only rcpd here)
mr_kib() {   # bytes rcpd has registered with the RDMA device, in KiB
  [ "$transport" = rdma ] || { echo 0; return; }
  rdma resource show mr 2>/dev/null | awk '/ comm rcpd / { for (i = 1; i < NF; i++) if ($i == "mrlen") s += $(i + 1) }
      END {printf "%d", s / 1024}'
}
qps() {
  if [ "$transport" = rdma ]; then rdma resource show qp 2>/dev/null | grep -c " comm rcpd " || true; else echo 0; fi
}
fds() { ls "/proc/$dp/fd" | wc -l; }
threads() { status Threads; }
snapshot() { echo "$(status VmRSS) $(status VmPin) $(mr_kib) $(qps) $(fds) $(threads)"; }
read -r rss0 pin0 mr0 qp0 fd0 th0 < <(snapshot)
printf '%-9s %9s %12s %12s %12s %8s %8s %8s\n' sessions "RSS MiB" "RSS/session" "pinned/sess" "MR/session" "QPs" "fds" "threads"
printf '%-9s %9.1f %12s %12s %12s %8s %8s %8s\n' 0 "$(echo "$rss0 / 1024" | bc -l)" - - - "$qp0" "$fd0" "$th0"
for n in $counts; do
  : > "$hold"
  pids=()
  for i in $(seq "$n"); do
    mkdir -p "$w/back/$i"
    "$bin/rcp/rcp" -q --transport "$transport" -P "$port" --tcp-port $((port + 1)) "$addr:b/f.bin" "$w/back/$i/" \
        2> "$w/c.$i.log" &
    pids+=($!)
  done
  # every client has its first chunk (its temp file is open), so every session is set up
  for _ in $(seq 600); do
    ready=0
    for p in "${pids[@]}"; do find "/proc/$p/fd" -lname "*(deleted)" -print -quit 2>/dev/null | grep -q . && ready=$((ready + 1)); done
    [ "$ready" = "$n" ] && break
    sleep 0.1
  done
  sleep 0.5
  read -r rss pin mr qp fd th < <(snapshot)
  printf '%-9s %9.1f %12.2f %12.2f %12.2f %8s %8s %8s%s\n' "$n" "$(echo "$rss / 1024" | bc -l)" \
      "$(echo "($rss - $rss0) / 1024 / $n" | bc -l)" "$(echo "(${pin:-0} - ${pin0:-0}) / 1024 / $n" | bc -l)" \
      "$(echo "($mr - $mr0) / 1024 / $n" | bc -l)" "$qp" "$fd" "$th" "$([ "$ready" = "$n" ] || echo "  (only $ready of $n sessions started)")"
  rm -f "$hold"
  bad=0
  for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
  for i in $(seq "$n"); do cmp -s "$w/export/f.bin" "$w/back/$i/f.bin" || bad=$((bad + 1)); done
  [ "$bad" = 0 ] || echo "  $bad of $n held pulls failed or differ:" "$(cat "$w"/c.*.log | sort -u | head -3)"
  rm -rf "$w/back"/* "$w"/c.*.log
done
echo "(control buffers: over RDMA 64 x 4 KiB of sends per session (256 KiB) and one shared receive queue of"
echo " 256 x 4 KiB (1 MiB) per device for all sessions; over TCP none registered;"
echo " pinned = VmPin: over RDMA the pool's pages count twice, once for the MR, once for io_uring's fixed buffers;"
echo " after the sessions ended: RSS $(( $(status VmRSS) / 1024 )) MiB, $(qps) QPs, $(fds) fds)"
