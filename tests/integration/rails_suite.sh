#!/bin/bash
# Proves multi-rail RDMA copies (rcp --rails, issue 15) with real rcpd and rcp processes in the
# soft-RoCE guest started with two links (tests/vm/rxe-run --links 2: rxe0/rxe1 on vethA/vethB,
# rxe2/rxe3 on vethC/vethD): a 48 MiB copy stripes its READs over both rails (per-rail bytes > 0
# in --json), a rail whose link goes down mid-copy is dropped and its chunks are read again over
# the other (byte-identical, the failed rail named on stderr and in --json), and rcpd ends with
# no QP and no MR of its own.
#
# usage: rails_suite.sh --bin DIR [--transport rdma] [--addr ADDR] [--work DIR]
# Needs RXE_ADDR_B/RXE_ADDR_D (rxe-run's second link); without them it says SKIP loudly and
# exits 77. Prints PASS/FAIL lines and ends with "N passed, N failed".
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # ok, bad, check
ERR_TAIL=8
bin= addr=${RXE_ADDR_B:-} work=
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --transport) [ "$2" = rdma ] || { echo "rails_suite: RDMA only" >&2; exit 2; }; shift 2 ;;
    --addr) addr=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "rails_suite: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] || { echo "rails_suite: --bin DIR is required" >&2; exit 2; }
RCP=$(cd "$bin/../rcp" 2>/dev/null && pwd)/rcp; [ -x "$RCP" ] || RCP=$bin/rcp
RCPD=$(cd "$bin/../rcpd" 2>/dev/null && pwd)/rcpd; [ -x "$RCPD" ] || RCPD=$bin/rcpd
if [ -z "${RXE_ADDR_D:-}" ] || [ -z "$addr" ]; then
  echo "rails_suite: SKIPPING (LOUD): no second link (run in tests/vm/rxe-run --links 2)" >&2
  exit 77
fi
[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-rails.XXXXXX)
mkdir -p "$work/exp" "$work/out"
port=$(( 24000 + ($$ % 500) * 2 ))
dpid=
# Taking vethC down also drops the policy route through it (rxe-run's table 102): without it,
# 10.78.0.2 is reached through lo and rxe3, so put it back with the link.
link_up() {
  ip link set "${RXE_NETDEV_C:-vethC}" up
  ip route replace "$RXE_ADDR_D" dev "${RXE_NETDEV_C:-vethC}" src "$RXE_ADDR_C" table 102
  ip route replace "$RXE_ADDR_C" dev "${RXE_NETDEV_D:-vethD}" src "$RXE_ADDR_D" table 103
  # and wait until both ports are ACTIVE with their IPv4 GID again (a rail opened before that
  # times out: RDMA_CM_EVENT_UNREACHABLE)
  local d g i
  for d in "${RXE_DEV_C:-rxe2}" "${RXE_DEV_D:-rxe3}"; do
    for i in $(seq 100); do
      g=$(cat "/sys/class/infiniband/$d/ports/1/gids/${RXE_GID_INDEX:-1}" 2>/dev/null)
      grep -q ACTIVE "/sys/class/infiniband/$d/ports/1/state" 2>/dev/null && [[ $g == *ffff:* ]] && break
      sleep 0.1
    done
  done
}
cleanup() {
  link_up 2>/dev/null
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid"; reap "$dpid" 30; fi
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "rails_suite: kept $work"; fi
}
trap cleanup EXIT
# rcpd listens on every address (the rails arrive at 10.78.0.2), over verbs only.
# In the guest both "hosts" share one network namespace, so rcpd would see the client's devices
# as its own: --rails gives it its side's two (as on a host of its own).
"$RCPD" --listen "*:$port" --transport rdma --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" \
  --export d="$work/exp" -vv > "$work/d.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d.log" && break; sleep 0.05; done
head -c $((48 << 20)) /dev/urandom > "$work/exp/big"
cp "$work/exp/big" "$work/src"
rail_field() {  # JSON DEVICE FIELD: a field of one rail in rcp's --json
  python3 -c 'import json,sys
r=[x for x in json.load(open(sys.argv[1]))["rails"] if x["device"]==sys.argv[2]]
print(r[0][sys.argv[3]] if r else "missing")' "$@"
}
dev_used() {  # JSON DEVICE LOCAL: one rail, on DEVICE, from LOCAL
  python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))["rails"]
sys.exit(not (len(r)==1 and r[0]["device"]==sys.argv[2] and r[0]["local"].startswith(sys.argv[3]+":") and r[0]["bytes"]>0))' "$@"
}
copy_on() {  # RC SRC OUT JSON DEVICE LOCAL: exit 0, OUT identical to SRC, one rail on DEVICE from LOCAL
  [ "$1" = 0 ] && cmp -s "$2" "$3" && dev_used "$4" "$5" "$6"
}
rcp() { timeout 300 "$RCP" --transport rdma -P "$port" "$@"; }

# --- a pull over two rails: both carry bytes
rcp --rails auto -vv --json "$addr:d/big" "$work/out/big" > "$work/pull.json" 2> "$work/err"; rc=$?
cp "$work/err" "$work/pull.err"
b0=$(rail_field "$work/pull.json" "${RXE_DEV_A:-rxe0}" bytes) b2=$(rail_field "$work/pull.json" "${RXE_DEV_C:-rxe2}" bytes)
check "pull of 48 MiB with --rails auto: exit 0, byte-identical, bytes on both rails (rxe0 $b0, rxe2 $b2; exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/big' && [ '$b0' -gt 0 ] 2>/dev/null && [ '$b2' -gt 0 ] 2>/dev/null"
check "-v names every rail with its bytes" grep -q "rail ${RXE_DEV_C:-rxe2} to ${RXE_ADDR_D}:$port: [1-9][0-9]* bytes" "$work/err"
check "the pool is registered on both rails at once (-vv)" grep -q "bytes registered on 2 of 2 rails in parallel in" "$work/pull.err"
# --- a push over two rails: rcpd reads, and logs its rails
rcp --rails auto --json "$work/src" "$addr:d/pushed" > "$work/push.json" 2> "$work/err"; rc=$?
sleep 0.5
check "push of 48 MiB with --rails auto: exit 0, byte-identical, rcpd read over both rails (exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/src' '$work/exp/pushed' &&
         grep -q 'rail ${RXE_DEV_B:-rxe1} to .*: [1-9][0-9]* bytes read' '$work/d.log' &&
         grep -q 'rail ${RXE_DEV_D:-rxe3} to .*: [1-9][0-9]* bytes read' '$work/d.log'"
# rcpd reports what it read per rail (RAIL_STATS): the push's --json has bytes on both rails,
# adding up to the file (48 MiB, no re-fetch)
b0=$(rail_field "$work/push.json" "${RXE_DEV_A:-rxe0}" bytes) b2=$(rail_field "$work/push.json" "${RXE_DEV_C:-rxe2}" bytes)
check "the push's --json has rcpd's per-rail bytes: rxe0 $b0 + rxe2 $b2 = 48 MiB" \
  sh -c "[ '$b0' -gt 0 ] 2>/dev/null && [ '$b2' -gt 0 ] 2>/dev/null && [ \$(( $b0 + $b2 )) = $((48 << 20)) ]"
# a lying rcpd: 1 TiB more than it read is refused (the copy stands, its counts are not used);
# a rail the client never joined ends the session
RCP_TEST_FAULT=rdma-rail-stats-lie=1 "$RCPD" --listen "*:$((port + 3))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" > "$work/d4.log" 2>&1 &
d4=$!
RCP_TEST_FAULT=rdma-rail-stats-lie=2 "$RCPD" --listen "*:$((port + 4))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" > "$work/d5.log" 2>&1 &
d5=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d4.log" && grep -q "rcpd: ready" "$work/d5.log" && break; sleep 0.05; done
timeout 300 "$RCP" --transport rdma -P "$((port + 3))" --rails auto --json "$work/src" "$addr:d/lie-stats" \
  > "$work/lie1.json" 2> "$work/err"; rc=$?
check "a daemon reporting 1 TiB more than offered: the push completes, its counts refused and not used (exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/src' '$work/exp/lie-stats' && grep -q 'reported reading .* bytes over its rails, more than the' '$work/err' &&
         python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"rails\"]; sys.exit(not (len(r)==2 and all(x[\"bytes\"]==0 for x in r)))' '$work/lie1.json'"
timeout 300 "$RCP" --transport rdma -P "$((port + 4))" --rails auto "$work/src" "$addr:d/lie-stats2" 2> "$work/err"; rc=$?
check "a daemon reporting a rail the client did not join: the session is refused, naming it (exit $rc)" \
  sh -c "[ $rc != 0 ] && grep -q 'RAIL_STATS names rail 3, which this session did not join' '$work/err'"
kill -TERM "$d4" "$d5"; wait "$d4" "$d5" 2>/dev/null
# a lying rcpd announcing rail keys for more registrations than it made (it registers its pool
# once): the client refuses to grow its table past 4, ending the session; no file
RCP_TEST_FAULT=rdma-rail-keys-lie "$RCPD" --listen "*:$((port + 9))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" > "$work/d10.log" 2>&1 &
d10=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d10.log" && break; sleep 0.05; done
timeout 300 "$RCP" --transport rdma -P "$((port + 9))" --rails auto "$addr:d/big" "$work/out/keylie" 2> "$work/err"; rc=$?
check "a daemon announcing RAIL_KEYS for 5 registrations: the pull is refused, naming it; no file (exit $rc)" \
  sh -c "[ $rc != 0 ] && grep -q 'RAIL_KEYS for more than 4 registrations' '$work/err' && [ ! -e '$work/out/keylie' ]"
kill -TERM "$d10"; wait "$d10" 2>/dev/null
# a lying rcpd sending on a standby control channel before moving control there: the first
# message there must be CONTROL_MOVED, so the client ends the session, naming it; no file
RCP_TEST_FAULT=rdma-standby-junk "$RCPD" --listen "*:$((port + 10))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" > "$work/d11.log" 2>&1 &
d11=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d11.log" && break; sleep 0.05; done
timeout 300 "$RCP" --transport rdma -P "$((port + 10))" --rails auto "$addr:d/big" "$work/out/junk" 2> "$work/err"; rc=$?
check "a daemon sending on a standby channel before CONTROL_MOVED: the session is refused, naming it; no file (exit $rc)" \
  sh -c "[ $rc != 0 ] && grep -q 'a message before CONTROL_MOVED on the standby control channel of rail 2' '$work/err' && [ ! -e '$work/out/junk' ]" \
  || sed 's/^/    client: /' "$work/err" | tail -n 3
kill -TERM "$d11"; wait "$d11" 2>/dev/null
# a daemon that keeps no standby control channel (as one from before them): the rails still
# carry READs, the client says control could not move
RCP_TEST_FAULT=rdma-no-standby "$RCPD" --listen "*:$((port + 6))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" > "$work/d7.log" 2>&1 &
d7=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d7.log" && break; sleep 0.05; done
timeout 300 "$RCP" --transport rdma -P "$((port + 6))" --rails auto -vv --json "$addr:d/big" "$work/out/nostandby" \
  > "$work/ns.json" 2> "$work/err"; rc=$?
kill -TERM "$d7"; wait "$d7" 2>/dev/null
b2=$(rail_field "$work/ns.json" "${RXE_DEV_C:-rxe2}" bytes)
check "a daemon without standby control channels: the pull still uses both rails (rxe2 $b2 bytes; exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/nostandby' && [ '$b2' -gt 0 ] 2>/dev/null &&
         grep -q 'keeps no standby control channel on this rail' '$work/err'"
check "the pull used exactly two rails (rcpd offers its side's two devices)" \
  sh -c "python3 -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))[\"rails\"]) != 2)' '$work/pull.json'"
# a greedy client asking for a standby control channel on every queue pair of a rail: rcpd
# grants the rail's first only (each costs it 0.5 MiB registered), the second join is answered
# without one (the client logs it) and the copy goes on over both rails
RCP_TEST_FAULT=rdma-standby-every timeout 300 "$RCP" --transport rdma -P "$port" --rails auto -vv --json \
  "$addr:d/big" "$work/out/greedy" > "$work/greedy.json" 2> "$work/err"; rc=$?
n=$(grep -c 'keeps no standby control channel on this rail' "$work/err")
b2=$(rail_field "$work/greedy.json" "${RXE_DEV_C:-rxe2}" bytes)
check "a client asking a standby channel on both QPs of rail 2 gets one: the second is refused once ($n), the pull completes over both rails (rxe2 $b2; exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/greedy' && [ '$n' = 1 ] && [ '$b2' -gt 0 ] 2>/dev/null"
# a rail whose join is never answered (as over a link that loses the CM's messages): the client
# gives the rails 5 s and goes on over the first, well inside the daemon's 10 s wait for its
# first request (before, the join waited 10 s and the daemon dropped the session)
RCP_TEST_FAULT=rdma-rail-silent "$RCPD" --listen "*:$((port + 7))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" -vv > "$work/d8.log" 2>&1 &
d8=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d8.log" && break; sleep 0.05; done
timeout 300 "$RCP" --transport rdma -P "$((port + 7))" --rails auto -vv --json "$addr:d/big" "$work/out/silent" \
  > "$work/silent.json" 2> "$work/err"; rc=$?
b0=$(rail_field "$work/silent.json" "${RXE_DEV_A:-rxe0}" bytes) f2=$(rail_field "$work/silent.json" "${RXE_DEV_C:-rxe2}" failed)
nj=no; case $f2 in "not joined: "*) nj=yes ;; esac
check "a rail join never answered: the pull completes over rail ${RXE_DEV_A:-rxe0} ($b0 bytes), naming the rail not joined ($f2; exit $rc), its pool not registered there" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/silent' && [ '$b0' = $((48 << 20)) ] &&
         grep -q 'queue pair 1 on ${RXE_DEV_C:-rxe2} not joined' '$work/err' &&
         grep -q 'bytes registered on 1 of 2 rails' '$work/err' && ! grep -q 'registered on 2 of 2' '$work/err' &&
         grep -q 'rail ${RXE_DEV_C:-rxe2} to .* not used: not joined: ' '$work/err' && [ $nj = yes ] &&
         grep -q 'left unanswered' '$work/d8.log'" \
  || { sed 's/^/    client: /' "$work/err" | tail -n 5; sed 's/^/    rcpd: /' "$work/d8.log" | tail -n 5; }
kill -TERM "$d8"; wait "$d8" 2>/dev/null
# rcpd too: the rail whose queue pairs never joined gets no registration of its pool
check "rcpd registers its pool on 1 of its 2 rails when the second never joined (-vv)" \
  sh -c "grep -q 'bytes registered on 1 of 2 rails' '$work/d8.log' && ! grep -q 'registered on 2 of 2' '$work/d8.log' &&
         ! grep -q 'after its queue pairs joined' '$work/d8.log'" || grep -h "registered" "$work/d8.log" | sed 's/^/    rcpd: /'
# queue pairs rcpd picks up after it registered its pool (RCP_TEST_FAULT rdma-rail-late: it
# registers on its first rail only, as if the others' joins came later): it registers on them
# then and, for a pull, sends their rkeys (RAIL_KEYS) — the client goes on to read over both
# rails; for a push, rcpd itself reads over both
RCP_TEST_FAULT=rdma-rail-late "$RCPD" --listen "*:$((port + 8))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" -vv > "$work/d9.log" 2>&1 &
d9=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d9.log" && break; sleep 0.05; done
timeout 300 "$RCP" --transport rdma -P "$((port + 8))" --rails auto --json "$addr:d/big" "$work/out/late" \
  > "$work/late.json" 2> "$work/err"; rc=$?
b2=$(rail_field "$work/late.json" "${RXE_DEV_C:-rxe2}" bytes)
check "rcpd registering on its second rail after the pull began: the client reads over it too (rxe2 $b2 bytes; exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/late' && [ '$b2' -gt 0 ] 2>/dev/null &&
         grep -q 'bytes registered on 1 of 2 rails' '$work/d9.log' &&
         grep -q 'bytes registered on rail 2 (${RXE_DEV_D:-rxe3}) after its queue pairs joined' '$work/d9.log'" \
  || grep -h "registered" "$work/d9.log" | sed 's/^/    rcpd: /'
timeout 300 "$RCP" --transport rdma -P "$((port + 8))" --rails auto "$work/src" "$addr:d/late-pushed" 2> "$work/err"; rc=$?
sleep 0.5
kill -TERM "$d9"; wait "$d9" 2>/dev/null
check "the same for a push: rcpd reads over its second rail once registered there (exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/src' '$work/exp/late-pushed' &&
         [ \$(grep -c 'after its queue pairs joined' '$work/d9.log') -ge 2 ] &&
         grep -q 'rail ${RXE_DEV_D:-rxe3} to .*: [1-9][0-9]* bytes read' '$work/d9.log'" \
  || grep -h "registered\|bytes read" "$work/d9.log" | sed 's/^/    rcpd: /'
# --- --rails naming devices: only those
rcp --rails "${RXE_DEV_A:-rxe0}" --json "$addr:d/big" "$work/out/one" > "$work/one.json" 2> "$work/err"; rc=$?
check "--rails ${RXE_DEV_A:-rxe0} alone: one rail, byte-identical (exit $rc)" \
  copy_on "$rc" "$work/exp/big" "$work/out/one" "$work/one.json" "${RXE_DEV_A:-rxe0}" "$RXE_ADDR_A"
rcp --rails nosuchdev "$addr:d/big" "$work/out/none" 2> "$work/err"; rc=$?
check "--rails with a device this host lacks is refused (exit $rc)" sh -c "[ $rc != 0 ] && grep -q nosuchdev '$work/err'"
# --- the path each rail took, in --json and with -v (issue 15: address and GID choice)
check "--json gives rail ${RXE_DEV_A:-rxe0}'s path: port 1, a RoCE v2 GID of $RXE_ADDR_A, local $RXE_ADDR_A, peer $addr" \
  python3 -c 'import json,sys
r=[x for x in json.load(open(sys.argv[1]))["rails"] if x["device"]==sys.argv[2]][0]
a,p=sys.argv[3],sys.argv[4]
sys.exit(not (r["port"]==1 and isinstance(r["gid_index"],int) and r["gid"].endswith(":"+a) and r["gid_type"]=="RoCE v2"
              and r["local"].startswith(a+":") and r["peer"].startswith(p+":") and r["chunks"]>0 and r["failed"] is None))' \
  "$work/pull.json" "${RXE_DEV_A:-rxe0}" "$RXE_ADDR_A" "$addr"
rcp -v "$addr:d/big" "$work/out/path" > /dev/null 2> "$work/err"; rc=$?
check "-v names the path: device, port, GID index and GID, RoCE v2, local and peer address (exit $rc)" \
  grep -q "rail 0: device ${RXE_DEV_A:-rxe0} port 1, GID index [0-9]* ::ffff:$RXE_ADDR_A (RoCE v2), $RXE_ADDR_A:[0-9]* -> $addr:$port" "$work/err"
# --- --device DEV forces rail 0's device; --bind ADDR its source address
rcp --device "${RXE_DEV_A:-rxe0}" --json "$addr:d/big" "$work/out/dev0" > "$work/dev0.json" 2> "$work/err"; rc=$?
check "--device ${RXE_DEV_A:-rxe0}: the copy runs on it, from $RXE_ADDR_A (exit $rc)" \
  copy_on "$rc" "$work/exp/big" "$work/out/dev0" "$work/dev0.json" "${RXE_DEV_A:-rxe0}" "$RXE_ADDR_A"
rcp --device "${RXE_DEV_C:-rxe2}" --json "$RXE_ADDR_D:d/big" "$work/out/dev2" > "$work/dev2.json" 2> "$work/err"; rc=$?
check "--device ${RXE_DEV_C:-rxe2} toward $RXE_ADDR_D: the copy runs on it, from $RXE_ADDR_C (exit $rc)" \
  copy_on "$rc" "$work/exp/big" "$work/out/dev2" "$work/dev2.json" "${RXE_DEV_C:-rxe2}" "$RXE_ADDR_C"
# rxe2 toward rxe1's address: the route to 10.77.0.2 leaves over vethA. Either rdma_cm keeps
# the id on rxe2 (then the copy must run on rxe2) or it is refused naming rxe2 — never
# silently run on another device.
rcp --device "${RXE_DEV_C:-rxe2}" --json "$addr:d/big" "$work/out/dev2x" > "$work/dev2x.json" 2> "$work/err"; rc=$?
echo "    --device ${RXE_DEV_C:-rxe2} toward $addr: exit $rc: $(tail -n 1 "$work/err")"
check "--device ${RXE_DEV_C:-rxe2} toward $addr: run on ${RXE_DEV_C:-rxe2} or refused naming it (exit $rc)" \
  sh -c "if [ $rc = 0 ]; then cmp -s '$work/exp/big' '$work/out/dev2x' && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"rails\"][0][\"device\"]!=sys.argv[2])' '$work/dev2x.json' '${RXE_DEV_C:-rxe2}';
         else grep -q -- '--device ${RXE_DEV_C:-rxe2}' '$work/err'; fi"
rcp --device nosuchdev "$addr:d/big" "$work/out/none" 2> "$work/err"; rc=$?
check "--device with a device this host lacks is refused, naming it (exit $rc)" \
  sh -c "[ $rc != 0 ] && grep -q \"no RDMA device 'nosuchdev'\" '$work/err' && [ ! -e '$work/out/none' ]"
rcp --bind "$RXE_ADDR_A" --json "$addr:d/big" "$work/out/bind" > "$work/bind.json" 2> "$work/err"; rc=$?
check "--bind $RXE_ADDR_A: the copy runs from it on ${RXE_DEV_A:-rxe0} (exit $rc)" \
  copy_on "$rc" "$work/exp/big" "$work/out/bind" "$work/bind.json" "${RXE_DEV_A:-rxe0}" "$RXE_ADDR_A"
rcp --bind 192.0.2.1 "$addr:d/big" "$work/out/none" 2> "$work/err"; rc=$?
check "--bind an address this host does not have is refused, naming it (exit $rc)" \
  sh -c "[ $rc != 0 ] && grep -q -- '--bind 192.0.2.1' '$work/err' && [ ! -e '$work/out/none' ]"
# --- a lying client: a rail join naming a rail rcpd did not announce, or another rail than the
# device it arrived on, is refused (the copy goes on over the rails that joined)
RCP_TEST_FAULT=rdma-rail-index=3 rcp --rails auto --json "$addr:d/big" "$work/out/lie" > "$work/lie.json" 2> "$work/err"; rc=$?
sleep 0.3
check "a rail join naming rail 3 of the 1 announced is refused; the copy completes (exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/lie' && grep -q 'names rail 3 of the 1 announced' '$work/d.log'"
# A rail's queue pairs joining as plain data QPs of the session (no rail named) over the rail's
# device: a QP there cannot use the session's PD, so rcpd refuses it; the copy goes on over rail 0
RCP_TEST_FAULT=rdma-join-plain rcp --rails auto "$addr:d/big" "$work/out/plain" 2> "$work/err"; rc=$?
sleep 0.3
check "a data QP joining over another device than its session's, naming no rail, is refused; the copy completes (exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/plain' && grep -q 'refused: it arrived on another RDMA device than its session' '$work/d.log'"
# A second daemon offering every device (3 rails: rxe0, rxe2, rxe3 in the one namespace): the
# client's join for the second address, reached over rxe2, names rail 1 (rxe0's).
"$RCPD" --listen "*:$((port + 1))" --transport rdma --export d="$work/exp" -vv > "$work/d2.log" 2>&1 &
d2=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d2.log" && break; sleep 0.05; done
RCP_TEST_FAULT=rdma-rail-index=1 timeout 300 "$RCP" --transport rdma -P "$((port + 1))" --rails auto \
  "$addr:d/big" "$work/out/lie2" 2> "$work/err"; rc=$?
kill -TERM "$d2"; wait "$d2" 2>/dev/null
check "a rail join that arrived on another device than the rail it names is refused (exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/lie2' && grep -q 'a join for rail 2 (.*) arrived on' '$work/d2.log'"
# --- failover: the second link goes down in the middle of four slowed copies run side by side
# (in the guest a rail opened over a link that bounced earlier times out in rdma_cm, so all
# copies open their rails first and the link goes down once). Two reach rcpd at $addr: the link
# carries their rail 2, which is dropped and its chunks read again over the other (in the push
# rcpd reads, in the pull rcp). Two reach it at $RXE_ADDR_D: the link carries their rail 1, the
# one control runs on — control moves to the standby channel on rail 2 (CONTROL_MOVED, what
# either side missed sent again) and the copies go on. All name the failed rail.
# A fifth copy meets a lying daemon: its CONTROL_MOVED claims 1000 more of the client's sends
# than it took. That daemon starts first, so all five copies start within a second or two and
# the link goes down while every one is under way (started after the four, its start-up under
# TCG once put the link-down after two of them had finished).
RCP_TEST_FAULT=rdma-moved-lie "$RCPD" --listen "*:$((port + 5))" --transport rdma \
  --rails "${RXE_DEV_B:-rxe1},${RXE_DEV_D:-rxe3}" --export d="$work/exp" > "$work/d6.log" 2>&1 &
d6=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/d6.log" && break; sleep 0.05; done
fo_start=$SECONDS
rcp --rails auto --bwlimit 4M -v --json "$work/src" "$addr:d/fo-pushed" > "$work/fop.json" 2> "$work/errp" &
push_pid=$!
rcp --rails auto --bwlimit 4M -v --json "$addr:d/big" "$work/out/fo" > "$work/fo.json" 2> "$work/err" &
pull_pid=$!
rcp --rails auto --bwlimit 4M -v --json "$work/src" "$RXE_ADDR_D:d/fo0-pushed" > "$work/fo0p.json" 2> "$work/err0p" &
push0_pid=$!
rcp --rails auto --bwlimit 4M -v --json "$RXE_ADDR_D:d/big" "$work/out/fo0" > "$work/fo0.json" 2> "$work/err0" &
pull0_pid=$!
timeout 300 "$RCP" --transport rdma -P "$((port + 5))" --rails auto --bwlimit 4M -v "$RXE_ADDR_D:d/big" "$work/out/folie" \
  2> "$work/errlie" &
lie_pid=$!
# -v says "connected to" once the rails have joined; the link goes down a second later, with
# every copy (48 MiB at 4 MB/s: 12 s or more) well under way; under TCG the five take up to 8 s
# to connect side by side.
for _ in $(seq 600); do
  n=0
  for f in errp err err0p err0 errlie; do grep -q "connected to" "$work/$f" 2>/dev/null && n=$((n + 1)); done
  [ $n = 5 ] && break
  sleep 0.1
done
sleep 1
ip link set "${RXE_NETDEV_C:-vethC}" down
echo "    link ${RXE_NETDEV_C:-vethC} down $((SECONDS - fo_start)) s after the five copies started ($n of 5 connected)"
# Each copy runs under `timeout 300`; 330 s after the link went down, a copy still there is
# one no signal ends (see stuck_report in lib.sh): the suite names it and goes on.
fo_end=$((SECONDS + 330))
reap "$push_pid" $((fo_end - SECONDS)); prc=$?
reap "$pull_pid" $((fo_end - SECONDS)); rc=$?
reap "$push0_pid" $((fo_end - SECONDS)); p0rc=$?
reap "$pull0_pid" $((fo_end - SECONDS)); r0rc=$?
reap "$lie_pid" $((fo_end - SECONDS)); lrc=$?
kill -TERM "$d6"; reap "$d6" 30
if [ -n "${reap_stuck:-}" ]; then
  echo "    copies held in the kernel with vethC down; bringing it up: do they go on?"
  link_up; sleep 20; stuck_report; ip link set "${RXE_NETDEV_C:-vethC}" down
fi
# while vethC is down rxe2's port is not ACTIVE: --device rxe2 has no usable port
rcp --device "${RXE_DEV_C:-rxe2}" "$RXE_ADDR_D:d/big" "$work/out/none" 2> "$work/errd"; drc=$?
link_up
sleep 0.5
grep -h "rail" "$work/d.log" | tail -n 6 | sed 's/^/    rcpd: /'
sed 's/^/    push client: /' "$work/errp" | tail -n 4
check "link down mid-push: exit 0, byte-identical, rcpd read over its rail ${RXE_DEV_D:-rxe3}, then dropped it, and rcp names ${RXE_DEV_C:-rxe2} (exit $prc)" \
  sh -c "[ $prc = 0 ] && cmp -s '$work/src' '$work/exp/fo-pushed' && grep -q 'rail 2 (${RXE_DEV_D:-rxe3} to .*) failed' '$work/d.log' &&
         grep -q 'rail ${RXE_DEV_D:-rxe3} to .*: [1-9][0-9]* bytes read in [0-9]* chunks, failed' '$work/d.log' &&
         grep -q 'rail ${RXE_DEV_C:-rxe2} .*failed' '$work/errp'"
f2=$(rail_field "$work/fo.json" "${RXE_DEV_C:-rxe2}" failed) fb=$(rail_field "$work/fo.json" "${RXE_DEV_C:-rxe2}" bytes)
check "link of rail ${RXE_DEV_C:-rxe2} down mid-pull: exit 0, byte-identical, the rail carried bytes ($fb) then was named failed ($f2; exit $rc)" \
  sh -c "[ $rc = 0 ] && cmp -s '$work/exp/big' '$work/out/fo' && [ '$f2' != None ] && [ '$f2' != missing ] && [ '$fb' -gt 0 ] 2>/dev/null &&
         grep -q 'rail ${RXE_DEV_C:-rxe2} .*failed' '$work/err'"
sed 's/^/    rail-0 pull client: /' "$work/err0" | grep -i "rail\|control\|error" | tail -n 4
sed 's/^/    rail-0 push client: /' "$work/err0p" | grep -i "rail\|control\|error" | tail -n 4
f0=$(rail_field "$work/fo0.json" "${RXE_DEV_C:-rxe2}" failed) b1=$(rail_field "$work/fo0.json" "${RXE_DEV_A:-rxe0}" bytes)
check "link of rail 1 (${RXE_DEV_C:-rxe2}, control) down mid-pull: exit 0, byte-identical, control moved to ${RXE_DEV_A:-rxe0}, which carried bytes ($b1), rail 1 named failed ($f0; exit $r0rc)" \
  sh -c "[ $r0rc = 0 ] && cmp -s '$work/exp/big' '$work/out/fo0' && [ '$f0' != None ] && [ '$f0' != missing ] && [ '$b1' -gt 0 ] 2>/dev/null &&
         grep -q 'rail 1 (${RXE_DEV_C:-rxe2} to .*) failed: .*; control moves to rail 2 (${RXE_DEV_A:-rxe0} to ' '$work/err0'"
check "link of rail 1 (control) down mid-push: exit 0, byte-identical, rcpd moved control from ${RXE_DEV_D:-rxe3} to ${RXE_DEV_B:-rxe1}, rcp names ${RXE_DEV_C:-rxe2} (exit $p0rc)" \
  sh -c "[ $p0rc = 0 ] && cmp -s '$work/src' '$work/exp/fo0-pushed' &&
         grep -q 'rail 1 (${RXE_DEV_D:-rxe3} to .*) failed: .*; control moves to rail 2 (${RXE_DEV_B:-rxe1} to ' '$work/d.log' &&
         grep -q 'rail 1 (${RXE_DEV_C:-rxe2} to .*) failed' '$work/err0p'"
check "a daemon whose CONTROL_MOVED claims more than the client sent: refused, naming the count; no file (exit $lrc)" \
  sh -c "[ $lrc != 0 ] && grep -q 'peer .* took [0-9]* of our control sends: [0-9]* were sent' '$work/errlie' && [ ! -e '$work/out/folie' ]" \
  || sed 's/^/    lied-to client: /' "$work/errlie" | tail -n 4
check "--device ${RXE_DEV_C:-rxe2} with its link down is refused: no ACTIVE port (exit $drc)" \
  sh -c "[ $drc != 0 ] && grep -q -- '--device ${RXE_DEV_C:-rxe2}: no usable port toward' '$work/errd'" || sed 's/^/    client: /' "$work/errd"
sleep 1
# --- rcpd keeps nothing of the sessions: no QP, no MR of its pid
qps=$(rdma res show qp 2>/dev/null | grep -c "pid $dpid ") mrs=$(rdma res show mr 2>/dev/null | grep -c "pid $dpid ")
check "rcpd holds 0 QPs and 0 MRs after the copies (QPs $qps, MRs $mrs)" [ "$qps" = 0 -a "$mrs" = 0 ]
# control failed over off rail 0 in the copies above: rcpd still put every buffer of its shared
# receive queues back (a receive taken after control moved goes back too)
short=$(cat "$work"/d*.log | grep "shared receive queue released" | grep -vc ": 256 of 256 buffers posted")
check "every shared receive queue rcpd released had its 256 buffers posted ($short short of it)" \
  sh -c "[ '$short' = 0 ] && cat '$work'/d*.log | grep -q 'shared receive queue released: 256 of 256'"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
