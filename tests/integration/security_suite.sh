#!/bin/bash
# Proves, with real rcpd and rcp processes over TCP on loopback (IPv4 and IPv6), that rcpd's
# configuration file, per-module access rules, mutual authentication and message/chunk MACs
# are enforced: every refusal reaches the client with a clear message and a distinct exit code
# (lib/cli/exit_codes.h: 3 access refused, 40 authentication), nothing is written on a refused
# or tampered copy, SIGHUP adds a module without dropping a running copy, SIGTERM stops
# cleanly, a daemon started as root drops to its configured user, and stale temp files go.
#
# usage: security_suite.sh --bin DIR [--transport tcp|rdma] [--addr ADDR] [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args security_suite "$@"
suite_bins security_suite

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-sec.XXXXXX)
mkdir -p "$work"
echo "security_suite[$transport]: work directory $work"
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$base tport=$((base + 1))

dpid= nstart=0 dargs=()
cleanup() {
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "security_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

secret=correct-horse-battery-staple
mkdir -p "$work"/{pub,drop,both,v4only,nov4,vault,vault2,out,src,late}
echo "bob's only" > "$work/vault2/w.txt"
echo "public file" > "$work/pub/a.txt"
echo "in the vault" > "$work/vault/v.txt"
echo "both ways" > "$work/both/b.txt"
echo "v4 only" > "$work/v4only/f.txt"
echo "no v4" > "$work/nov4/f.txt"
head -c 300000 /dev/urandom > "$work/src/data.bin"
echo "pushed" > "$work/src/p.txt"
printf '# rcpd secrets\nalice:%s\nbob:%s\n' "$secret" "bobs-own-secret-$$" > "$work/secrets"; chmod 600 "$work/secrets"
printf '%s\n' "$secret" > "$work/pw"; chmod 600 "$work/pw"
printf 'not-the-secret-at-all\n' > "$work/pw.wrong"; chmod 600 "$work/pw.wrong"

write_conf() {  # FILE [extra TOML appended]
  cat > "$1" <<TOML
[daemon]
listen = ["$addr", "::1"]
port = $rport
tcp_port = $tport

[modules.pub]
path = "$work/pub"
comment = "read-only by default"

[modules.drop]
path = "$work/drop"
read_only = false
write_only = true

[modules.both]
path = "$work/both"
read_only = false

[modules.v4only]
path = "$work/v4only"
hosts_allow = ["127.0.0.0/8"]

[modules.nov4]
path = "$work/nov4"
hosts_deny = ["127.0.0.1"]

[modules.vault]
path = "$work/vault"
read_only = false
auth_users = ["alice"]
secrets_file = "$work/secrets"

[modules.vault2]
path = "$work/vault2"
auth_users = ["bob"]
secrets_file = "$work/secrets"
TOML
  [ $# -gt 1 ] && printf '%s\n' "$2" >> "$1"
  return 0
}
write_conf "$work/rcpd.conf"

start_daemon() {  # CONF [ENV=VAL ...]
  local conf=$1; shift
  nstart=$((nstart + 1)); dlog=$work/rcpd.$nstart.log
  (exec env "$@" "$RCPD" --config "$conf" --transport "$transport" "${dargs[@]}" -v >> "$dlog" 2>&1) &
  dpid=$!
  for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && return 0; sleep 0.05; done
  echo "rcpd did not start:"; cat "$dlog"; exit 1
}
stop_daemon() { kill -TERM "$dpid" 2>/dev/null; wait "$dpid"; drc=$?; dpid=; }
rcp() { (exec timeout 60 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
no_temps() { [ -z "$(find "$1" -name '.*.rcp-*' 2>/dev/null)" ]; }
err_has() { grep -qi -- "$1" "$work/err"; }

# --- configuration errors are startup errors naming file, line and key -------------------------
write_conf "$work/bad.conf" $'\n[modules.typo]\npath = "/tmp"\nread_onyl = true'
"$RCPD" --config "$work/bad.conf" --transport tcp > "$work/err" 2>&1; rc=$?
check "config: unknown key refused at start (exit $rc), naming file:line:key" \
  bash -c "[ $rc -ne 0 ] && grep -q 'rcpd: .*bad.conf:[0-9]*.*read_onyl' '$work/err'"
printf '[daemon]\nmax_connections = "many"\n[modules.x]\npath = "/tmp"\n' > "$work/bad2.conf"
"$RCPD" --config "$work/bad2.conf" --transport tcp > "$work/err" 2>&1; rc=$?
check "config: wrong type refused at start (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && grep -q 'bad2.conf:2.*max_connections' '$work/err'"
"$RCPD" --config "$work/missing.conf" --transport tcp > "$work/err" 2>&1; rc=$?
check "config: missing file refused at start (exit $rc)" bash -c "[ $rc -ne 0 ] && grep -q 'missing.conf' '$work/err'"
chmod 644 "$work/secrets"
"$RCPD" --config "$work/rcpd.conf" --transport tcp > "$work/err" 2>&1; rc=$?
check "config: a secrets file others can read refused at start (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && grep -q 'secrets' '$work/err'"
chmod 600 "$work/secrets"
# --export still works and says what it is
(exec "$RCPD" --export tmp="$work/both" --listen "$addr:$rport" --tcp-port "$tport" --transport "$transport" > "$work/export.log" 2>&1) &
epid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/export.log" && break; sleep 0.05; done
check "--export says it is read-write without authentication" grep -q "read-write, with no authentication" "$work/export.log"
rcp "$work/src/p.txt" "$addr:tmp/exported.txt"; rc=$?
check "--export module accepts a push (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/src/p.txt' '$work/both/exported.txt'"
rm -f "$work/both/exported.txt"
kill -TERM "$epid"; wait "$epid"

# stale temp files from a killed daemon are removed at start
mkdir -p "$work/both/sub"
echo junk > "$work/both/.b.txt.rcp-abc12345"; echo junk > "$work/both/sub/.x.rcp-zz99yy88"
echo keep > "$work/both/.keep.rcp-NOT-TEMP"
start_daemon "$work/rcpd.conf"
check "stale .NAME.rcp-* temp files removed at start (others kept)" \
  bash -c "[ ! -e '$work/both/.b.txt.rcp-abc12345' ] && [ ! -e '$work/both/sub/.x.rcp-zz99yy88' ] && [ -e '$work/both/.keep.rcp-NOT-TEMP' ]"
rm -rf "$work/both/.keep.rcp-NOT-TEMP" "$work/both/sub"

# --- per-module access -------------------------------------------------------------------------
rcp "$addr:pub/a.txt" "$work/out/"; rc=$?
check "read_only module: pull works (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/pub/a.txt' '$work/out/a.txt'"
rcp "$work/src/data.bin" "$addr:pub/data.bin"; rc=$?
check "read_only (the default): push refused, exit 3, clear message, nothing written (exit $rc)" \
  bash -c "[ $rc = 3 ] && grep -q \"module 'pub' is read-only\" '$work/err' && [ ! -e '$work/pub/data.bin' ] && [ -z \"\$(find '$work/pub' -name '.*.rcp-*')\" ]"
rcp "$work/src/data.bin" "$addr:drop/data.bin"; rc=$?
check "write_only module: push works (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/drop/data.bin'"
rcp "$addr:drop/data.bin" "$work/out/"; rc=$?
check "write_only module: pull refused, exit 3, nothing written (exit $rc)" \
  bash -c "[ $rc = 3 ] && grep -q 'write-only' '$work/err' && [ ! -e '$work/out/data.bin' ]"
rcp "$addr:v4only/f.txt" "$work/out/"; rc=$?
check "hosts_allow 127.0.0.0/8: 127.0.0.1 admitted (exit $rc)" bash -c "[ $rc = 0 ] && [ -e '$work/out/f.txt' ]"
rm -f "$work/out/f.txt"
rcp "[::1]:v4only/f.txt" "$work/out/"; rc=$?
check "hosts_allow 127.0.0.0/8: ::1 refused, exit 3, naming the host (exit $rc)" \
  bash -c "[ $rc = 3 ] && grep -q 'denied for host ::1' '$work/err' && [ ! -e '$work/out/f.txt' ]"
rcp "$addr:nov4/f.txt" "$work/out/"; rc=$?
check "hosts_deny 127.0.0.1: 127.0.0.1 refused, exit 3 (exit $rc)" \
  bash -c "[ $rc = 3 ] && grep -q 'denied for host 127.0.0.1' '$work/err' && [ ! -e '$work/out/f.txt' ]"
rcp "[::1]:nov4/f.txt" "$work/out/"; rc=$?
check "hosts_deny 127.0.0.1: ::1 admitted (exit $rc)" bash -c "[ $rc = 0 ] && [ -e '$work/out/f.txt' ]"

# --- mutual authentication ---------------------------------------------------------------------
rcp "$addr:vault/v.txt" "$work/out/"; rc=$?
check "auth module: no credentials refused, exit 40, says how (exit $rc)" \
  bash -c "[ $rc = 40 ] && grep -q 'requires authentication' '$work/err' && [ ! -e '$work/out/v.txt' ]"
rcp --password-file "$work/pw.wrong" "alice@$addr:vault/v.txt" "$work/out/"; rc=$?
check "auth module: wrong password refused, exit 40 (exit $rc)" \
  bash -c "[ $rc = 40 ] && grep -q 'authentication failed for user alice' '$work/err' && [ ! -e '$work/out/v.txt' ]"
RCP_PASSWORD=$secret rcp "mallory@$addr:vault/v.txt" "$work/out/"; rc=$?
check "auth module: unknown user refused like a wrong password, exit 40 (exit $rc)" \
  bash -c "[ $rc = 40 ] && [ ! -e '$work/out/v.txt' ]"
rcp --password-file "$work/pw" "alice@$addr:vault/v.txt" "$work/out/"; rc=$?
check "auth module: right secret (--password-file) pulls (exit $rc)" \
  bash -c "[ $rc = 0 ] && cmp -s '$work/vault/v.txt' '$work/out/v.txt'"
RCP_PASSWORD=$secret rcp "$work/src/data.bin" "alice@$addr:vault/up.bin"; rc=$?
check "auth module: right secret (RCP_PASSWORD) pushes, keyed chunk digests (exit $rc)" \
  bash -c "[ $rc = 0 ] && cmp -s '$work/src/data.bin' '$work/vault/up.bin'"
check "daemon logged the session as authenticated" grep -q "put vault/up.bin over .*(authenticated)" "$dlog"
chmod 644 "$work/pw"
rcp --password-file "$work/pw" "alice@$addr:vault/v.txt" "$work/out/v2.txt"; rc=$?
check "client: a password file others can read is refused, exit 40 (exit $rc)" \
  bash -c "[ $rc = 40 ] && grep -q 'accessible by others' '$work/err' && [ ! -e '$work/out/v2.txt' ]"
chmod 600 "$work/pw"
rcp "$addr:pub/a.txt" "$work/out/a2.txt"; rc=$?
check "module without auth_users works without a secret (exit $rc)" bash -c "[ $rc = 0 ] && [ -e '$work/out/a2.txt' ]"
RCP_PASSWORD=$secret rcp "alice@$addr:pub/a.txt" "$work/out/a3.txt"; rc=$?
check "client with a secret refuses a daemon that does not authenticate (exit $rc)" \
  bash -c "[ $rc = 40 ] && grep -q 'refusing the daemon' '$work/err' && [ ! -e '$work/out/a3.txt' ]"
# a lying client: authenticated as alice for vault, it opens vault2 (bob's): refused
RCP_TEST_FAULT=auth-module=vault RCP_PASSWORD=$secret rcp "alice@$addr:vault2/w.txt" "$work/out/"; rc=$?
check "a client authenticated for one module cannot open another with it, nothing written (exit $rc)" \
  bash -c "[ $rc != 0 ] && grep -q \"authenticated for module 'vault', not 'vault2'\" '$work/err' && [ ! -e '$work/out/w.txt' ]"
# ... or sends something else where OPEN belongs: refused; the daemon goes on serving
RCP_TEST_FAULT=auth-then-done RCP_PASSWORD=$secret rcp "alice@$addr:vault/v.txt" "$work/out/v4.txt"; rc=$?
check "a client sending DONE where OPEN belongs after authenticating is refused (exit $rc)" \
  bash -c "[ $rc != 0 ] && grep -q 'expected OPEN after authentication' '$dlog' && [ ! -e '$work/out/v4.txt' ]"
RCP_PASSWORD=$secret rcp "alice@$addr:vault/v.txt" "$work/out/v5.txt"; rc=$?
check "  ... and the daemon still serves the next client (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/vault/v.txt' '$work/out/v5.txt'"

# --- tampering on an authenticated session ------------------------------------------------------
# The client's sealed messages: OPEN (0), then the file: p.txt is small, so its SMALL_FILE (1;
# its last byte is the file's last).
RCP_TEST_FAULT=tamper-control=1 RCP_PASSWORD=$secret rcp "$work/src/p.txt" "alice@$addr:vault/tampered.txt"; rc=$?
check "a control message altered after its MAC (SMALL_FILE data) is refused, nothing written (exit $rc)" \
  bash -c "[ $rc != 0 ] && [ -z \"\$(ls '$work/vault' | grep -v -x -e v.txt -e up.bin)\" ] && grep -q 'failed its MAC check' '$dlog'"
RCP_TEST_FAULT=source-corrupt=0 RCP_PASSWORD=$secret rcp "$work/src/data.bin" "alice@$addr:vault/corrupt.bin"; rc=$?
check "chunk data altered after its keyed digest is caught, nothing committed (exit $rc)" \
  bash -c "[ $rc != 0 ] && grep -q 'keyed (HMAC-SHA256) verification' '$work/err' && [ ! -e '$work/vault/corrupt.bin' ]"
check "no temp files left in the vault" no_temps "$work/vault"
stop_daemon
check "SIGTERM stops the daemon cleanly (exit $drc)" test "$drc" = 0

# The daemon's sealed messages on a pull: OPEN_OK (0), v.txt's SMALL_FILE (1).
start_daemon "$work/rcpd.conf" RCP_TEST_FAULT=tamper-control=1
mkdir -p "$work/out/pulled"
RCP_PASSWORD=$secret rcp "alice@$addr:vault/v.txt" "$work/out/pulled/"; rc=$?
check "client refuses a SMALL_FILE altered in flight, nothing written (exit $rc)" \
  bash -c "[ $rc != 0 ] && grep -q 'failed its MAC check' '$work/err' && [ -z \"\$(ls -A '$work/out/pulled')\" ]"
stop_daemon

# --- impostor daemons ---------------------------------------------------------------------------
start_daemon "$work/rcpd.conf" RCP_TEST_FAULT=auth-bad-proof
RCP_PASSWORD=$secret rcp "alice@$addr:vault/v.txt" "$work/out/imp1.txt"; rc=$?
check "impostor daemon (wrong proof) refused, exit 40, nothing written (exit $rc)" \
  bash -c "[ $rc = 40 ] && grep -q 'could not prove' '$work/err' && [ ! -e '$work/out/imp1.txt' ]"
RCP_PASSWORD=$secret rcp "$work/src/p.txt" "alice@$addr:vault/imp.txt"; rc=$?
check "impostor daemon (wrong proof): push refused before any data, exit 40 (exit $rc)" \
  bash -c "[ $rc = 40 ] && [ ! -e '$work/vault/imp.txt' ]"
stop_daemon
start_daemon "$work/rcpd.conf" RCP_TEST_FAULT=auth-skip
RCP_PASSWORD=$secret rcp "alice@$addr:vault/v.txt" "$work/out/imp2.txt"; rc=$?
check "impostor daemon (skips authentication) refused, exit 40 (exit $rc)" \
  bash -c "[ $rc = 40 ] && grep -q 'did not authenticate' '$work/err' && [ ! -e '$work/out/imp2.txt' ]"
stop_daemon

# --- SIGHUP: adds a module while a slowed copy runs; an invalid file keeps the old one ----------
start_daemon "$work/rcpd.conf" RCP_TEST_FAULT=source-delay-ms=40
head -c $((40 * 256 * 1024)) /dev/urandom > "$work/both/slow.bin"
( "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" --chunk-size 256 "$addr:both/slow.bin" "$work/out/slow.bin" 2> "$work/slow.err"; echo $? > "$work/slow.rc" ) &
cpid=$!
sleep 0.5
write_conf "$work/rcpd.conf" $'\n[modules.late]\npath = "'"$work"'/late"'
echo "late module" > "$work/late/l.txt"
kill -HUP "$dpid"
for _ in $(seq 100); do grep -q "reloaded" "$dlog" && break; sleep 0.05; done
check "SIGHUP re-read the file while a copy runs" bash -c "grep -q reloaded '$dlog' && kill -0 $dpid && [ ! -e '$work/slow.rc' ]"
rcp "$addr:late/l.txt" "$work/out/"; rc=$?
check "the module SIGHUP added serves (exit $rc)" bash -c "[ $rc = 0 ] && cmp -s '$work/late/l.txt' '$work/out/l.txt'"
wait "$cpid"
check "the copy running across SIGHUP completed (exit $(cat "$work/slow.rc"))" \
  bash -c "[ \"\$(cat '$work/slow.rc')\" = 0 ] && cmp -s '$work/both/slow.bin' '$work/out/slow.bin'"
cp "$work/rcpd.conf" "$work/good.conf"
printf '[daemon]\nbogus = 1\n' > "$work/rcpd.conf"
kill -HUP "$dpid"
for _ in $(seq 100); do grep -q "keeping the configuration" "$dlog" && break; sleep 0.05; done
rcp "$addr:late/l.txt" "$work/out/l2.txt"; rc=$?
check "an invalid file on SIGHUP is reported and the old configuration kept (exit $rc)" \
  bash -c "[ $rc = 0 ] && grep -q 'rcpd.conf:2.*bogus.*keeping the configuration' '$dlog' && kill -0 $dpid"
cp "$work/good.conf" "$work/rcpd.conf"
stop_daemon
check "SIGTERM after reloads stops cleanly (exit $drc)" test "$drc" = 0

# --- pid_file, a module's own max_connections, idle_timeout -----------------------------------
mkdir -p "$work/one" "$work/other"
cat > "$work/limits.conf" <<TOML
[daemon]
listen = ["$addr"]
port = $rport
tcp_port = $tport
idle_timeout = 2
pid_file = "$work/rcpd.pid"
[modules.one]
path = "$work/one"
read_only = false
max_connections = 1
[modules.other]
path = "$work/other"
read_only = false
TOML
start_daemon "$work/limits.conf"
check "pid_file holds the daemon's pid ($(cat "$work/rcpd.pid" 2>/dev/null) = $dpid)" \
  test "$(cat "$work/rcpd.pid" 2>/dev/null)" = "$dpid"
head -c $((12 * 1048576)) /dev/urandom > "$work/src/slow.bin"
head -c 1048576 /dev/urandom > "$work/src/one-chunk.bin"
# 12 chunks of 1 MiB at 300 ms each, 2 in flight (the source's delays add up per batch it
# hashes: 0.6 s between messages, under idle_timeout): module one is held for ~3.6 s
(exec env RCP_TEST_FAULT=source-delay-ms=300 timeout 60 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" \
   --window 2 "$work/src/slow.bin" "$addr:one/slow.bin" 2> "$work/slow.err") & spid=$!
sleep 0.8
rcp "$work/src/p.txt" "$addr:one/second.txt"; rc=$?
check "module max_connections 1: a second session on it is told busy (exit $rc, want 5)" \
  bash -c "[ $rc = 5 ] && grep -q \"module 'one' is busy\" '$work/err' && [ ! -e '$work/one/second.txt' ]"
rcp "$work/src/p.txt" "$addr:other/meanwhile.txt"; rc=$?
check "  ... while another module serves (exit $rc)" test "$rc" = 0
wait "$spid"; src=$?
check "  ... and the first session finishes (exit $src)" bash -c "[ $src = 0 ] && cmp -s '$work/src/slow.bin' '$work/one/slow.bin'"
rcp "$work/src/p.txt" "$addr:one/third.txt"; rc=$?
check "  ... after which the module takes a session again (exit $rc)" test "$rc" = 0
# A client that stalls 4 s before its only chunk is dropped by idle_timeout = 2
env RCP_TEST_FAULT=source-delay-ms=4000 timeout 60 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" \
  "$work/src/one-chunk.bin" "$addr:other/stalled.bin" 2> "$work/err"; rc=$?
check "idle_timeout 2: a stalled session is dropped (client exit $rc), nothing left" \
  bash -c "[ $rc != 0 ] && [ ! -e '$work/other/stalled.bin' ] && [ -z \"\$(find '$work/other' -name '.*.rcp-*')\" ]"
check "  ... and the daemon says why" grep -q "no progress from .* for 2 s" "$dlog"
stop_daemon
check "pid_file removed at exit" test ! -e "$work/rcpd.pid"

# --- privilege drop ----------------------------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
  id rcpdtest > /dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin rcpdtest
  chmod 755 "$work"; chmod 755 "$work/pub"
  cat > "$work/user.conf" <<TOML
[daemon]
listen = ["$addr"]
port = $rport
tcp_port = $tport
user = "rcpdtest"
[modules.pub]
path = "$work/pub"
TOML
  # After the drop the daemon has the user's RLIMIT_MEMLOCK (8 MiB here: the container cannot raise
  # the hard limit), so its pool must fit in it: 8 chunks of 256 KiB.
  dargs=(--chunk-size 256 --window 8)
  start_daemon "$work/user.conf"
  dargs=()
  uid=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$dpid/status")
  want=$(id -u rcpdtest)
  check "started as root with user = rcpdtest: runs as uid $want (Uid: $uid)" test "$uid" = "$want $want $want $want"
  gid=$(awk '/^Gid:/ {print $2}' "/proc/$dpid/status")
  check "and its group (Gid $gid), no supplementary groups" \
    bash -c "[ '$gid' = '$(id -g rcpdtest)' ] && [ -z \"\$(awk '/^Groups:/ {print \$2}' /proc/$dpid/status | grep -v -x '$gid')\" ]"
  rcp "$addr:pub/a.txt" "$work/out/asuser.txt"; rc=$?
  check "the unprivileged daemon serves (exit $rc)" test "$rc" = 0
  stop_daemon
  # A user or group that does not exist is a startup error, never a daemon left running as root.
  sed 's/^user = .*/user = "rcpd-no-such-user"/' "$work/user.conf" > "$work/nouser.conf"
  timeout 20 "$RCPD" --config "$work/nouser.conf" --transport "$transport" > "$work/err" 2>&1; rc=$?
  check "user = a name that does not exist: rcpd refuses to start (exit $rc), naming it" \
    bash -c "[ $rc != 0 ] && [ $rc != 124 ] && grep -q \"user 'rcpd-no-such-user' (from \[daemon\] user) does not exist\" '$work/err'"
  printf 'group = "rcpd-no-such-group"\n' | sed '/^user = /r /dev/stdin' "$work/user.conf" > "$work/nogroup.conf"
  timeout 20 "$RCPD" --config "$work/nogroup.conf" --transport "$transport" > "$work/err" 2>&1; rc=$?
  check "group = a name that does not exist: rcpd refuses to start (exit $rc), naming it" \
    bash -c "[ $rc != 0 ] && [ $rc != 124 ] && grep -q \"group 'rcpd-no-such-group' does not exist\" '$work/err'"
else
  echo "SKIP privilege drop: not root"
fi

echo "security_suite[$transport]: $pass passed, $fail failed"
[ "$fail" = 0 ]
