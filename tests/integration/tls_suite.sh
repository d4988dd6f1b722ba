#!/bin/bash
# rcp --encrypt (TLS 1.3 over TCP) with real rcpd and rcp processes on loopback: encrypted push
# and pull are byte-identical; a wire tap (tests/tools/tlspeer relay) sees a marker string of the
# file without --encrypt and never with it; a module with `encrypt = true` (and a daemon with
# `encrypt = "required"`) refuses a plain client with a clear message and exit 41; a daemon with
# `encrypt = "never"` is refused by rcp --encrypt (41); --encrypt --transport rdma is a usage
# error; a man in the middle that terminates TLS itself is refused on a module with auth_users
# (exit 40, nothing written) while a relay that does not is not; a corrupted TLS record ends
# the copy with a clear error and nothing written; a join that does not match its session's
# encryption is refused; a TLS hello that stalls is cut by the hello deadline.
#
# usage: tls_suite.sh --bin DIR [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins, logged
suite_args tls_suite "$@"
RCP=$(cd "$bin/../rcp" 2>/dev/null && pwd)/rcp; [ -x "$RCP" ] || RCP=$bin/rcp
RCPD=$(cd "$bin/../rcpd" 2>/dev/null && pwd)/rcpd; [ -x "$RCPD" ] || RCPD=$bin/rcpd
PEER=$(cd "$bin/.." && pwd)/tests/tlspeer
for b in "$RCP" "$RCPD" "$PEER"; do [ -x "$b" ] || { echo "tls_suite: $b not built" >&2; exit 2; }; done

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-tls.XXXXXX)
mkdir -p "$work"
echo "tls_suite: work directory $work"
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$base tport=$((base + 1)) relport=$((base + 2)) mport=$((base + 3))

dpid= ppid_= nstart=0
cleanup() {
  [ -n "$ppid_" ] && kill "$ppid_" 2>/dev/null
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "tls_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

secret=correct-horse-battery-staple
marker=RCP-PLAINTEXT-MARKER-7f3a9c
mkdir -p "$work"/{open,sealed,vault,sealedvault,out,src}
# A file whose plaintext is easy to spot on the wire: the marker, many times, between random bytes.
for _ in $(seq 64); do head -c 4000 /dev/urandom; printf '%s' "$marker"; done > "$work/src/data.bin"
cp "$work/src/data.bin" "$work/open/remote.bin"
cp "$work/src/data.bin" "$work/vault/remote.bin"
echo "sealed" > "$work/sealed/s.txt"
printf 'alice:%s\n' "$secret" > "$work/secrets"; chmod 600 "$work/secrets"
printf '%s\n' "$secret" > "$work/pw"; chmod 600 "$work/pw"

write_conf() {  # FILE [daemon encrypt policy]
  cat > "$1" <<TOML
[daemon]
listen = ["$addr"]
port = $rport
tcp_port = $tport
hello_timeout = 2
${2:+encrypt = \"$2\"}

[modules.open]
path = "$work/open"
read_only = false

[modules.sealed]
path = "$work/sealed"
read_only = false
encrypt = true

[modules.vault]
path = "$work/vault"
read_only = false
auth_users = ["alice"]
secrets_file = "$work/secrets"

[modules.sealedvault]
path = "$work/sealedvault"
read_only = false
auth_users = ["alice"]
secrets_file = "$work/secrets"
encrypt = true
TOML
}

start_daemon() {  # CONF
  nstart=$((nstart + 1)); dlog=$work/rcpd.$nstart.log
  (exec "$RCPD" --config "$1" --transport tcp -v >> "$dlog" 2>&1) &
  dpid=$!
  for _ in $(seq 200); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && return 0; sleep 0.05; done
  echo "rcpd did not start:"; cat "$dlog"; exit 1
}
stop_daemon() { kill -TERM "$dpid" 2>/dev/null; wait "$dpid"; dpid=; }
start_peer() {  # MODE ARGS... : a relay or man in the middle, until stop_peer
  (exec "$PEER" "$@" > "$work/peer.out" 2> "$work/peer.err") &
  ppid_=$!
  for _ in $(seq 200); do grep -q listening "$work/peer.out" 2>/dev/null && return 0; sleep 0.05; done
  echo "tlspeer did not start:"; cat "$work/peer.err"; exit 1
}
stop_peer() { kill "$ppid_" 2>/dev/null; wait "$ppid_" 2>/dev/null; ppid_=; }
rcp() { (exec timeout 60 "$RCP" --transport tcp -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
via() { (exec timeout 60 "$RCP" --transport tcp --tcp-port "$relport" "$@" 2> "$work/err"); }
no_temps() { [ -z "$(find "$1" -name '.*.rcp-*' 2>/dev/null)" ]; }
err_has() { grep -qi -- "$1" "$work/err"; }
markers() { grep -c -a -- "$marker" "$1" 2>/dev/null || true; }

write_conf "$work/rcpd.conf"
start_daemon "$work/rcpd.conf"

# --- encrypted copies are byte-identical, both ways, one and several streams ----------------------
for streams in 1 4; do
  rm -f "$work/open/pushed.bin" "$work/out/pulled.bin"
  rcp -v --encrypt --streams $streams "$work/src/data.bin" "$addr:open/pushed.bin"; rc=$?
  check "encrypted push, $streams stream(s) (exit $rc), identical" \
    bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/open/pushed.bin'"
  check "  -v says the session is encrypted and how" err_has "encrypted: TLSv1.3"
  rcp --encrypt --streams $streams "$addr:open/remote.bin" "$work/out/pulled.bin"; rc=$?
  check "encrypted pull, $streams stream(s) (exit $rc), identical" \
    bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/out/pulled.bin'"
done
check "the daemon logs encrypted sessions" grep -q "(encrypted)" "$dlog"
# A larger file: many records, read replies decrypted straight into the landing buffers.
head -c 40000000 /dev/urandom > "$work/src/big.bin"
rcp --encrypt --streams 2 --chunk-size 256 "$work/src/big.bin" "$addr:open/big.bin"; rc=$?
check "encrypted push of 40 MB (exit $rc), identical" bash -c "[ $rc = 0 ] && cmp -s '$work/src/big.bin' '$work/open/big.bin'"
rcp --encrypt --streams 2 "$addr:open/big.bin" "$work/out/big.bin"; rc=$?
check "encrypted pull of 40 MB (exit $rc), identical" bash -c "[ $rc = 0 ] && cmp -s '$work/src/big.bin' '$work/out/big.bin'"
rm -f "$work/open/big.bin" "$work/out/big.bin" "$work/src/big.bin"
timeout 60 "$RCP" -v --encrypt --transport auto -P "$rport" --tcp-port "$tport" "$work/src/data.bin" \
  "$addr:open/auto.bin" 2> "$work/err"; rc=$?
check "--encrypt with --transport auto uses TCP and says so (exit $rc)" \
  bash -c "[ $rc = 0 ] && grep -q 'using TCP with TLS' '$work/err'"
timeout 60 "$RCP" --encrypt --transport rdma -P "$rport" "$work/src/data.bin" "$addr:open/x.bin" 2> "$work/err"; rc=$?
check "--encrypt --transport rdma is a usage error (exit $rc)" bash -c "[ $rc = 1 ] && grep -q 'RDMA sessions are not encrypted' '$work/err'"

# --- what a wire tap sees --------------------------------------------------------------------------
start_peer relay "$relport" "$tport" "$work/plain.cap"
rm -f "$work/open/pushed.bin"; via "$work/src/data.bin" "$addr:open/pushed.bin"; rc1=$?
via "$addr:open/remote.bin" "$work/out/tap-plain.bin"; rc2=$?
stop_peer
n=$(markers "$work/plain.cap")
check "without --encrypt the tap sees the file's plaintext (exits $rc1 $rc2, $n markers)" \
  bash -c "[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ $n -gt 0 ]"
start_peer relay "$relport" "$tport" "$work/tls.cap"
rm -f "$work/open/pushed.bin"; via --encrypt "$work/src/data.bin" "$addr:open/pushed.bin"; rc1=$?
via --encrypt "$addr:open/remote.bin" "$work/out/tap-tls.bin"; rc2=$?
stop_peer
n=$(markers "$work/tls.cap"); size=$(stat -c %s "$work/tls.cap")
check "with --encrypt the tap never sees it (exits $rc1 $rc2, $n markers in $size bytes)" \
  bash -c "[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ $n = 0 ] && [ $size -gt 500000 ] && cmp -s '$work/src/data.bin' '$work/out/tap-tls.bin'"

# --- modules and daemons that require encryption ---------------------------------------------------
rcp "$work/src/data.bin" "$addr:sealed/plain.bin"; rc=$?
check "encrypt = true module refuses a plain push (exit $rc = 41), nothing written" \
  bash -c "[ $rc = 41 ] && grep -q \"module 'sealed' requires encryption\" '$work/err' && [ ! -e '$work/sealed/plain.bin' ] && [ -z \"\$(find '$work/sealed' -name '.*.rcp-*')\" ]"
rcp "$addr:sealed/s.txt" "$work/out/"; rc=$?
check "encrypt = true module refuses a plain pull (exit $rc = 41)" bash -c "[ $rc = 41 ] && [ ! -e '$work/out/s.txt' ]"
RCP_PASSWORD=$secret rcp "$work/src/data.bin" "alice@$addr:sealedvault/plain.bin"; rc=$?
check "encrypt = true module with auth_users refuses a plain client before authenticating (exit $rc = 41)" \
  bash -c "[ $rc = 41 ] && grep -q \"module 'sealedvault' requires encryption\" '$work/err' && [ ! -e '$work/sealedvault/plain.bin' ]"
RCP_PASSWORD=$secret rcp --encrypt "$work/src/data.bin" "alice@$addr:sealedvault/enc.bin"; rc=$?
check "  and accepts an authenticated encrypted push (exit $rc)" \
  bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/sealedvault/enc.bin'"
rcp --encrypt "$work/src/data.bin" "$addr:sealed/enc.bin"; rc=$?
check "encrypt = true module accepts an encrypted push (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/sealed/enc.bin'"
stop_daemon

write_conf "$work/required.conf" required
start_daemon "$work/required.conf"
rcp "$work/src/data.bin" "$addr:open/plain.bin"; rc=$?
check "[daemon] encrypt = \"required\" refuses a plain push to any module (exit $rc)" \
  bash -c "[ $rc = 41 ] && grep -q 'requires encryption' '$work/err' && [ ! -e '$work/open/plain.bin' ]"
rcp "$addr:"; rc=$?
check "  and a plain listing (exit $rc)" bash -c "[ $rc = 41 ]"
rcp --encrypt "$work/src/data.bin" "$addr:open/enc.bin"; rc=$?
check "  and accepts an encrypted one (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/open/enc.bin'"
stop_daemon

write_conf "$work/never.conf" never
"$RCPD" --config "$work/never.conf" --transport tcp > "$work/err" 2>&1; rc=$?
check "encrypt = \"never\" with a module that requires encryption is a startup error (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && grep -q 'never.conf:[0-9]*.*modules.sealed.encrypt' '$work/err'"
sed -i '/^encrypt = true$/d' "$work/never.conf"
start_daemon "$work/never.conf"
rcp --encrypt "$work/src/data.bin" "$addr:open/never.bin"; rc=$?
check "rcp --encrypt refuses a daemon with encrypt = \"never\" (exit $rc = 41)" \
  bash -c "[ $rc = 41 ] && grep -q 'does not offer encryption' '$work/err' && [ ! -e '$work/open/never.bin' ]"
check "  ... and the daemon refuses the hello that asks for TLS too, saying so" \
  logged "$dlog" "refused: hello from .* asks for TLS, which this daemon does not offer"
rcp "$work/src/data.bin" "$addr:open/never.bin"; rc=$?
check "  while a plain client still copies (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/open/never.bin'"
stop_daemon

# --- a man in the middle that terminates TLS ------------------------------------------------------
start_daemon "$work/rcpd.conf"
start_peer mitm "$relport" "$tport"
rm -f "$work/vault/mitm.bin"
RCP_PASSWORD=$secret via --encrypt "$work/src/data.bin" "alice@$addr:vault/mitm.bin"; rc=$?
check "a TLS-terminating man in the middle fails authentication (exit $rc = 40), nothing written" \
  bash -c "[ $rc = 40 ] && grep -q 'terminating TLS' '$work/peer.err' && [ ! -e '$work/vault/mitm.bin' ] && [ -z \"\$(find '$work/vault' -name '.*.rcp-*')\" ]"
RCP_PASSWORD=$secret via --encrypt "alice@$addr:vault/remote.bin" "$work/out/mitm-pull.bin"; rc=$?
check "  and a pull through it (exit $rc = 40), nothing written" bash -c "[ $rc = 40 ] && [ ! -e '$work/out/mitm-pull.bin' ]"
# Without auth_users there is nothing to bind TLS to: it keeps out passive taps only (documented).
via --encrypt "$work/src/data.bin" "$addr:open/mitm-open.bin"; rc=$?
check "  (without auth_users it is not detected: encryption alone stops passive taps only; exit $rc)" \
  bash -c "[ $rc = 0 ]"
stop_peer
# A clean TLS end (close_notify) in the middle of a pull: the copy ends, saying so
start_peer mitm-close "$relport" "$tport" 65536
via --encrypt --streams 1 "$addr:open/remote.bin" "$work/out/closed.bin"; rc=$?
check "a close_notify in the middle of a pull ends it, named, nothing written (exit $rc)" \
  bash -c "[ $rc != 0 ] && grep -q 'ended TLS (close_notify)' '$work/err' && grep -q 'close_notify to the client' '$work/peer.err' && [ ! -e '$work/out/closed.bin' ]"
stop_peer
# Only the extra streams through a man in the middle: they must present the first stream's key.
start_peer mitm-joins "$relport" "$tport"
RCP_PASSWORD=$secret via --encrypt --streams 3 "$work/src/data.bin" "alice@$addr:vault/joins.bin"; rc=$?
check "extra streams through a TLS-terminating man in the middle are refused (exit $rc = 40), nothing written" \
  bash -c "[ $rc = 40 ] && grep -q 'different key' '$work/err' && [ ! -e '$work/vault/joins.bin' ]"
stop_peer
start_peer mitm-joins "$relport" "$tport"  # (it relays only the first connection it sees untouched)
via --encrypt --streams 2 "$work/src/data.bin" "$addr:open/joins.bin"; rc=$?
check "  also on a module without auth_users (exit $rc = 40)" bash -c "[ $rc = 40 ] && [ ! -e '$work/open/joins.bin' ]"
stop_peer
start_peer relay "$relport" "$tport" "$work/auth.cap"
RCP_PASSWORD=$secret via --encrypt --streams 3 "$work/src/data.bin" "alice@$addr:vault/relayed.bin"; rc=$?
stop_peer
check "a relay that does not terminate TLS: the authenticated encrypted push works (exit $rc)" \
  bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/vault/relayed.bin'"

# --- a corrupted TLS record -----------------------------------------------------------------------
start_peer relay "$relport" "$tport" "$work/flip.cap" flip-s2c 120000
via --encrypt --streams 1 "$addr:open/remote.bin" "$work/out/flipped.bin"; rc=$?
stop_peer
check "pull: a corrupted TLS record ends the copy (exit $rc), names TLS, nothing written" \
  bash -c "[ $rc -ne 0 ] && grep -qi 'TLS record' '$work/err' && [ ! -e '$work/out/flipped.bin' ] && [ -z \"\$(find '$work/out' -name '.*.rcp-*')\" ]"
start_peer relay "$relport" "$tport" "$work/flip2.cap" flip-c2s 120000
via --encrypt --streams 1 "$work/src/data.bin" "$addr:open/flipped.bin"; rc=$?
stop_peer
sleep 0.2
check "push: a corrupted TLS record ends the copy (exit $rc), the daemon names it, nothing written" \
  bash -c "[ $rc -ne 0 ] && grep -qi 'TLS record' '$dlog' && [ ! -e '$work/open/flipped.bin' ] && [ -z \"\$(find '$work/open' -name '.*.rcp-*')\" ]"

# --- joins must match their session; the TLS handshake is inside the hello deadline ---------------
out=$(timeout 30 "$PEER" join-plain "$tport" 2>&1); rc=$?
check "a plain join into an encrypted session is refused (exit $rc: $out)" bash -c "[ $rc = 0 ]"
out=$(timeout 30 "$PEER" join-tls "$tport" 2>&1); rc=$?
check "an encrypted join into a plain session is refused (exit $rc: $out)" bash -c "[ $rc = 0 ]"
out=$(timeout 30 "$PEER" stall "$tport" 2>&1); rc=$?
check "a client that asks for TLS and stalls is cut by the hello deadline (exit $rc: $out)" bash -c "[ $rc = 0 ]"
rcp --encrypt "$addr:open/remote.bin" "$work/out/after.bin"; rc=$?
check "the daemon still serves after all that (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/out/after.bin'"
stop_daemon

echo "tls_suite: $pass passed, $fail failed"
[ "$fail" = 0 ]
