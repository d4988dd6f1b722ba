#!/bin/bash
# How many TCP connections a copy opens when --streams is not given, with real rcpd and rcp
# processes: 1 to a daemon on this host (loopback), where more streams only cost (bench/
# README.md), and 2 to a daemon elsewhere. "Elsewhere" is a real second network stack: an
# rcpd in its own network namespace, reached over a veth pair (as root with ip(8); without
# them that half prints a loud SKIPPING line). Every copy byte-exact, both directions; -v
# names the streams and whether sends are zero-copy (on only toward another host).
#
# usage: streams_suite.sh --bin DIR [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args streams_suite "$@"
suite_bins streams_suite
[ "$transport" = tcp ] || { echo "streams_suite: TCP only (--streams over RDMA is copy_suite's)" >&2; exit 2; }

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-streams.XXXXXX)
mkdir -p "$work"
src=$work/src exp=$work/export out=$work/out
rm -rf "$src" "$exp" "$out"; mkdir -p "$src" "$exp" "$out"
# Ports: this suite's own offset (+9/+10) from the per-process base the other suites use.
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$((base + 9)) tport=$((base + 10))

# A namespace and addresses unique to this run (two runs at once must not share a subnet).
ns=rcp-streams-$$ veth=rcps$(( $$ % 100000 ))
net=10.$(( 150 + $$ % 100 )).$(( ($$ / 100) % 250 ))
dpid= npid=
cleanup() {
  for p in $dpid $npid; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  ip netns del "$ns" 2>/dev/null   # takes the veth pair with it
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "streams_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
# start_daemon LOG ADDR [WRAPPER...]: rcpd listening on ADDR (run under WRAPPER), ready; sets REPLY to its pid
start_daemon() {
  local log=$1 a=$2; shift 2
  ("$@" "$RCPD" --listen "$a:$tport" -P "$rport" --transport tcp --export data="$exp" -v >> "$log" 2>&1) &
  REPLY=$!
  for _ in $(seq 100); do grep -q "rcpd: ready" "$log" 2>/dev/null && return 0; sleep 0.05; done
  echo "rcpd did not start:"; cat "$log"; exit 1
}
rcp() { (exec timeout 120 "$RCP" -v --transport tcp -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
head -c $((3 * 1048576 + 17)) /dev/urandom > "$src/file"

# --- a daemon on this host: 1 stream unless asked
start_daemon "$work/rcpd.local.log" 127.0.0.1; dpid=$REPLY
rcp "$src/file" 127.0.0.1:data/local-push; rc=$?
check "a push to a daemon on this host uses 1 TCP stream by default (exit $rc)" grep -q "over tcp: 1 stream(s)," "$work/err"
check "  ... zero-copy off (local peer)" grep -q "zero-copy send off (local peer)" "$work/err"
check "  ... byte-exact" cmp -s "$src/file" "$exp/local-push"
rcp 127.0.0.1:data/local-push "$out/local-pull"; rc=$?
check "a pull from it: 1 TCP stream (exit $rc)" grep -q "over tcp: 1 stream(s)," "$work/err"
check "  ... byte-exact" cmp -s "$src/file" "$out/local-pull"
rcp --streams 2 "$src/file" 127.0.0.1:data/local-2; rc=$?
check "--streams 2 to it opens 2 (exit $rc)" grep -q "over tcp: 2 stream(s)," "$work/err"
check "  ... byte-exact" cmp -s "$src/file" "$exp/local-2"
kill -TERM "$dpid"; wait "$dpid" 2>/dev/null; dpid=

# --- a daemon on another network stack: 2 streams unless asked
if [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null; then
  echo "streams_suite: SKIPPING THE OTHER-HOST HALF: needs root and ip(8) for a network namespace" >&2
elif ! { ip netns add "$ns" && ip link add "$veth" type veth peer name "${veth}n" netns "$ns" &&
         ip addr add "$net.1/24" dev "$veth" && ip link set "$veth" up &&
         ip -n "$ns" addr add "$net.2/24" dev "${veth}n" && ip -n "$ns" link set "${veth}n" up &&
         ip -n "$ns" link set lo up; } 2> "$work/ip.err"; then
  echo "streams_suite: SKIPPING THE OTHER-HOST HALF: no network namespace here: $(tr '\n' ' ' < "$work/ip.err")" >&2
else
  start_daemon "$work/rcpd.ns.log" "$net.2" ip netns exec "$ns"; npid=$REPLY
  rcp "$src/file" "$net.2:data/far-push"; rc=$?
  check "a push to a daemon on another host uses 2 TCP streams by default (exit $rc)" grep -q "over tcp: 2 stream(s)," "$work/err"
  check "  ... zero-copy on" grep -q "zero-copy send on" "$work/err"
  check "  ... byte-exact" cmp -s "$src/file" "$exp/far-push"
  rcp "$net.2:data/far-push" "$out/far-pull"; rc=$?
  check "a pull from it: 2 TCP streams (exit $rc)" grep -q "over tcp: 2 stream(s)," "$work/err"
  check "  ... byte-exact" cmp -s "$src/file" "$out/far-pull"
  rcp --streams 1 "$src/file" "$net.2:data/far-1"; rc=$?
  check "--streams 1 to it opens 1 (exit $rc)" grep -q "over tcp: 1 stream(s)," "$work/err"
  check "  ... byte-exact" cmp -s "$src/file" "$exp/far-1"
  check "the daemon saw the client from the other side ($net.1)" grep -q "$net.1" "$work/rcpd.ns.log"
fi

echo "streams_suite: $pass passed, $fail failed"
[ "$fail" = 0 ]
