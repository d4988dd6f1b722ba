#!/bin/bash
# Bounded resources, no hang: real rcpd and rcp over TCP on loopback, attacked by tests/rawpeer.
# Each attack must leave the daemon serving a legitimate client within 2 s (timeout 2 on the copy:
# behaviour, not a benchmark), and the daemon's descriptors and RSS must come back to where they
# were once the attack is over. Also: max_per_host with its refusals logged once, max_connections
# counting joined streams, the accept back-off when descriptors run out (ulimit -n), and a file
# name with a newline that must not forge a daemon log line.
#
# usage: limits_suite.sh --bin DIR [--work DIR]
# Attackers come from loopback source addresses 127.0.1.x (the legitimate client from
# 127.0.0.1), so max_per_host does not decide every check by itself.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # writing_into
suite_args limits_suite "$@"
RCP=$(cd "$bin/../rcp" 2>/dev/null && pwd)/rcp; [ -x "$RCP" ] || RCP=$bin/rcp
RCPD=$(cd "$bin/../rcpd" 2>/dev/null && pwd)/rcpd; [ -x "$RCPD" ] || RCPD=$bin/rcpd
RAWPEER=$(cd "$bin/.." && pwd)/tests/rawpeer
for b in "$RCP" "$RCPD" "$RAWPEER"; do [ -x "$b" ] || { echo "limits_suite: $b not built" >&2; exit 2; }; done

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-limits.XXXXXX)
mkdir -p "$work"
exp=$work/export src=$work/src out=$work/out
rm -rf "$exp" "$src" "$out"; mkdir -p "$exp" "$src" "$out"
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$base tport=$((base + 1)) addr=127.0.0.1
log() { echo "limits_suite: $*"; }

dpid= nstart=0 bgpids=()
cleanup() {
  for p in "${bgpids[@]}"; do kill "$p" 2>/dev/null; done
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "limits_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
start_daemon() {  # -|N|SN (no limit, ulimit -n N, ulimit -Sn N) [rcpd options...]
  local nofile=$1; shift
  nstart=$((nstart + 1)); dlog=$work/rcpd.$nstart.log
  ( case $nofile in -) ;; S*) ulimit -Sn "${nofile#S}" ;; *) ulimit -n "$nofile" ;; esac
    grep -q __asan_init "$RCPD" 2> /dev/null && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16"
    exec "$RCPD" --listen "$addr:$rport" --tcp-port "$tport" --transport tcp --export data="$exp" --max-per-host 8 --hello-timeout 5 -v "$@" >> "$dlog" 2>&1 ) &
  dpid=$!
  for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && return 0; sleep 0.05; done
  echo "rcpd did not start:"; cat "$dlog"; exit 1
}
stop_daemon() { kill -TERM "$dpid" 2>/dev/null; wait "$dpid"; drc=$?; }
rcp() { (exec timeout 20 "$RCP" --transport tcp -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
# A legitimate copy that must finish within 2 s; NAME is a fresh target in the export.
legit() {  # NAME
  rm -f "$exp/$1"
  (exec timeout 2 "$RCP" --transport tcp -P "$rport" --tcp-port "$tport" "$src/file" "$addr:data/$1" 2> "$work/err") &&
    cmp -s "$src/file" "$exp/$1"
}
nfds() { ls /proc/$dpid/fd 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' /proc/$dpid/status; }
cpu_ticks() { awk '{print $14 + $15}' /proc/$dpid/stat; }
# Waits up to 10 s for the daemon's fds to be back at $fd0 and its RSS within the slack (rcpd
# gives freed heap back once its accept loop has been idle 500 ms), then checks both.
settled() {  # WHAT
  for _ in $(seq 100); do [ "$(nfds)" -le "$fd0" ] && [ "$(rss)" -le $((rss0 + slack)) ] && break; sleep 0.1; done
  local f r; f=$(nfds); r=$(rss)
  check "  ... after $1 the daemon's fds are back to $fd0 (has $f)" test "$f" -le "$fd0"
  check "  ... and its RSS to ${rss0} KiB + $((slack / 1024)) MiB slack (has $r KiB)" test "$r" -le $((rss0 + slack))
}
lines_since() { tail -n +$(( $1 + 1 )) "$dlog" | wc -l; }

head -c $((256 * 1024)) /dev/urandom > "$src/file"
start_daemon -
log "rcpd $("$RCPD" --version) on $addr port $tport, work $work"
# Warm up (first session's allocations, thread stacks), then take the baseline.
for i in 1 2 3; do rcp "$src/file" "$addr:data/warm$i"; done
sleep 0.5
fd0=$(nfds) rss0=$(rss)
# The RSS bound is 6 MiB above the baseline. Each handshake runs on a thread of its own, and what
# those threads free stays resident in glibc's per-thread arenas unless the daemon trims them
# (util/heap.h). 200 stalled TLS handshakes left, without the trim, +2.1 to +12.6 MiB (8 runs,
# 6 of them above 6 MiB; CI failed on one at +12.6 against the 12 MiB bound this test had). The
# trim was a no-op until 2026-12-07 (heap.cc tested __GLIBC__ before any header defined it), and
# this check failed 2 runs of 3 at +6.1 to +6.9 MiB; with the trim working, +0.9 to +4.0 MiB
# right after the TLS flood and +1.3 to +1.6 MiB after every attack (3 runs): what stays is
# each arena's first pages and the chunks still in use. heap_test checks the trim itself.
# ASan's allocator keeps freed memory in quarantine (256 MiB by default), so the RSS after a
# flood says little about leaks in a sanitizer build (LeakSanitizer checks those at exit): there
# the bound is 96 MiB, and the daemon runs with a 16 MiB quarantine (start_daemon): 200 stalled
# TLS handshakes still left +42 MiB, 300 with the default quarantine +130 MiB.
asan=0 slack=6144
if grep -q __asan_init "$RCPD" 2>/dev/null; then asan=1 slack=98304; fi
log "baseline: $fd0 fds, RSS $rss0 KiB"
check "a legitimate copy before any attack" legit base

# --- 300 idle connections from 40 addresses: pending handshakes are capped, the oldest evicted
# (counted after 2 s, well inside the 5 s hello deadline: an evicted hello must end at once,
# not when its deadline passes)
l0=$(wc -l < "$dlog")
"$RAWPEER" $addr $tport idle 300 2 40 > "$work/idle.out" 2>&1 & ipid=$!; bgpids+=($ipid)
sleep 1.5
check "300 idle connections: a legitimate copy within 2 s" legit idle
wait $ipid
log "$(tr '\n' ' ' < "$work/idle.out")"
held=$(grep -o '[0-9]* still open' "$work/idle.out" | awk '{print $1}')
check "  ... of which the daemon held at most its 64 pending handshakes (held ${held:-?})" test "${held:-999}" -le 64
n=$(lines_since "$l0")
check "  ... and the daemon logged $n lines for them (at most one per address and reason: < 100)" test "$n" -lt 100
settled "300 idle connections"

# --- the same, each stalled inside the TLS handshake its hello asked for: evicted at once too
"$RAWPEER" $addr $tport idle 200 2 40 tls > "$work/idle-tls.out" 2>&1
log "$(tr '\n' ' ' < "$work/idle-tls.out")"
held=$(grep -o '[0-9]* still open' "$work/idle-tls.out" | awk '{print $1}')
check "200 connections stalled in the TLS handshake: the daemon held at most its 64 (held ${held:-?})" test "${held:-999}" -le 64
settled "200 stalled TLS handshakes"

# --- slow loris: 40 connections from 10 addresses, one hello byte every 4 s: every one cut by 5 s
"$RAWPEER" $addr $tport slow-loris 40 10 > "$work/loris.out" 2>&1 & lpid=$!; bgpids+=($lpid)
sleep 1.5
check "slow loris: a legitimate copy within 2 s" legit loris
wait $lpid; lrc=$?
log "$(cat "$work/loris.out")"
longest=$(grep -o 'longest lived [0-9.]*' "$work/loris.out" | awk '{print int($3)}')
check "  ... the daemon cut every slow-loris connection" test "$lrc" = 0
check "  ... none lived past the 5 s whole-hello deadline (+1 s; longest ${longest:-?} s)" test "${longest:-99}" -le 6
settled "the slow loris"

# --- 1,000 join attempts on a session that announced 2 streams
"$RAWPEER" $addr $tport extra-joins 1000 > "$work/joins.out" 2>&1 & jpid=$!; bgpids+=($jpid)
sleep 0.5
check "1,000 join attempts: a legitimate copy within 2 s" legit joins
wait $jpid; jrc=$?
check "  ... exactly one join admitted, the rest refused ($(cat "$work/joins.out"))" test "$jrc" = 0
settled "1,000 join attempts"

# --- a first message other than OPEN or AUTH_REQUEST (or a malformed one): refused, naming it
for kind in done:"expected OPEN as the first message" unknown-type:"unknown message type 999" auth-challenge:"expected AUTH_REQUEST or OPEN as the first message" \
            auth-truncated:"truncated or malformed AUTH_REQUEST"; do
  l0=$(wc -l < "$dlog")
  "$RAWPEER" $addr $tport first-message "${kind%%:*}" > "$work/first.out" 2>&1; frc=$?
  sleep 0.2
  check "first message ${kind%%:*}: refused, the daemon logs '${kind#*:}' ($(cat "$work/first.out"))" \
    bash -c "[ $frc = 0 ] && tail -n +$((l0 + 1)) '$dlog' | grep -q '${kind#*:}'"
done
check "  ... and a legitimate copy still works" legit after-first

# --- max_per_host: 20 idle connections from one address, 8 are kept and 12 refused, logged once
l0=$(wc -l < "$dlog")
"$RAWPEER" $addr $tport idle 20 2 1 > "$work/host.out" 2>&1
log "$(tr '\n' ' ' < "$work/host.out")"
check "max_per_host 8: 12 of 20 connections from one address refused, 8 kept" \
  grep -q "closed 12 of them, 8 still open" "$work/host.out"
n=$(tail -n +$((l0 + 1)) "$dlog" | grep -c "refusing tcp connections from 127.0.1.1")
check "  ... and the refusals are logged once, not 12 times (logged $n)" test "$n" = 1
settled "the per-host refusals"

# --- a file name with a newline cannot forge a daemon log line
nl=$'evil\nrcpd: error: forged'
printf 'x' > "$src/$nl"
rcp "$src/$nl" "$addr:data/$nl"
check "a file named with a newline is pushed" test $? = 0 -a -f "$exp/$nl"
sleep 0.2
check "  ... the daemon logged its session on one line, the newline escaped" grep -qF 'evil\nrcpd: error: forged' "$dlog"
check "  ... and no forged line appeared" test "$(grep -c '^rcpd: error: forged' "$dlog")" = 0

check "daemon still running" kill -0 "$dpid"
stop_daemon
check "daemon exits cleanly on SIGTERM (status $drc)" test "$drc" = 0

# --- with stderr as the journal (JOURNAL_STREAM = its dev:ino) every line carries a priority
nstart=$((nstart + 1)); jlog=$work/rcpd.$nstart.log; : > "$jlog"
( export JOURNAL_STREAM=$(stat -c '%d:%i' "$jlog"); exec "$RCPD" --listen "$addr:$rport" --tcp-port "$tport" \
    --transport tcp --export data="$exp" --export 'bad name=/nonexistent' >> "$jlog" 2>&1 )
check "stderr as the journal: lines start with a <N> priority" grep -q '^<3>rcpd: error: ' "$jlog"
check "  ... and none without it" test "$(grep -vc '^<[0-9]>' "$jlog")" = 0

# --- max_connections counts joined streams: a 4-stream copy fills --max-connections 4
start_daemon - --max-connections 4
head -c $((2 * 1048576)) /dev/urandom > "$src/two"
# 32 chunks of 64 KiB, 200 ms each at the source: the copy lasts seconds
RCP_TEST_FAULT=source-delay-ms=200 "$RCP" --transport tcp -P "$rport" --tcp-port "$tport" --streams 4 \
  --chunk-size 64 "$src/two" "$addr:data/four" 2> "$work/four.err" & cpid=$!; bgpids+=($cpid)
for _ in $(seq 50); do writing_into "$exp" && break; sleep 0.05; done
rm -f "$exp/fifth"
(exec timeout 5 "$RCP" --transport tcp -P "$rport" --tcp-port "$tport" --streams 1 "$src/file" "$addr:data/fifth" 2> "$work/err")
frc=$?
check "max_connections 4 with a 4-stream copy running: a fifth connection is refused" test "$frc" != 0 -a ! -e "$exp/fifth"
check "  ... and the daemon says so" grep -q "connections already (max_connections 4)" "$dlog"
wait $cpid
check "  ... the 4-stream copy itself arrives" cmp -s "$src/two" "$exp/four"
check "  ... and once it ended, the next client is served" legit fifth
stop_daemon

# --- out of descriptors: while a slowed copy runs, the daemon's RLIMIT_NOFILE is lowered (prlimit,
# as `ulimit -n` would at start) to exactly the descriptors it holds, so every accept fails with
# EMFILE for seconds while 20 connections wait in the queue and nothing can be evicted: the
# accept loop must back off (not spin), say so once, and serve again once descriptors free up.
# Not in a sanitizer build: UBSan's vptr check probes an object's memory through a pipe(2),
# which fails while the process has no descriptor left, and then reports a live object as
# having an "invalid vptr" (seen: every eviction under EMFILE). The same eviction path runs
# checked by ASan+UBSan in the idle-flood test above; this case runs in the plain build.
if [ "$asan" = 0 ]; then
start_daemon -
fd0=$(nfds)
RCP_TEST_FAULT=source-delay-ms=200 "$RCP" --transport tcp -P "$rport" --tcp-port "$tport" --streams 1 \
  --chunk-size 64 "$src/two" "$addr:data/slow" 2> "$work/slow.err" & cpid=$!; bgpids+=($cpid)
for _ in $(seq 50); do writing_into "$exp" && break; sleep 0.05; done
sleep 0.3
held=$(nfds)
# Only the soft limit moves: raising a hard limit back needs CAP_SYS_RESOURCE, which a CI
# container's root may lack (seen: "prlimit: failed to set the NOFILE resource limit").
soft0=$(prlimit --pid "$dpid" --nofile --raw --noheadings --output SOFT)
prlimit --pid "$dpid" --nofile="$held:"
"$RAWPEER" $addr $tport idle 20 4 10 > "$work/emfile.out" 2>&1 & epid=$!; bgpids+=($epid)
sleep 0.5
t0=$(cpu_ticks); sleep 3; t1=$(cpu_ticks)
prlimit --pid "$dpid" --nofile="$soft0:" || bad "restoring the daemon's RLIMIT_NOFILE to $soft0" "prlimit failed"
wait $epid
log "$(tr '\n' ' ' < "$work/emfile.out")"
n=$(grep -c "accept tcp: Too many open files" "$dlog")
check "EMFILE (RLIMIT_NOFILE lowered to the $held fds held): the daemon said so once (said it $n times)" test "$n" = 1
check "  ... without spinning: $((t1 - t0)) CPU ticks in 3 s (< 15)" test $((t1 - t0)) -lt 15
wait $cpid
check "  ... the copy that held the descriptors arrives" cmp -s "$src/two" "$exp/slow"
for _ in $(seq 60); do [ "$(nfds)" -le "$fd0" ] && break; sleep 0.1; done
check "  ... and once the flood is gone, a legitimate copy within 2 s" legit after-emfile
check "daemon still running" kill -0 "$dpid"
stop_daemon
else
  echo "SKIP (LOUD): EMFILE back-off not run in a sanitizer build (UBSan's vptr probe needs a free descriptor); the plain build runs it"
fi

# --- a low soft RLIMIT_NOFILE: both programs raise it to the hard limit at start (util/nofile.h).
# A receiver holds a descriptor per file it is receiving: rcp pulling 5,000 files of 4 KiB
# peaked at 398, and under ulimit -Sn 256 failed 138 of them with EMFILE before.
start_daemon S64
soft=$(prlimit --pid "$dpid" --nofile --raw --noheadings --output SOFT)
hard=$(prlimit --pid "$dpid" --nofile --raw --noheadings --output HARD)
[ "$hard" = unlimited ] || [ "$hard" -gt 1048576 ] && want=1048576 || want=$hard
check "rcpd started under ulimit -Sn 64 raised its soft RLIMIT_NOFILE to $want (has $soft, hard $hard)" test "$soft" = "$want"
mkdir -p "$src/many"
for i in $(seq 700); do echo "$i" > "$src/many/m$i"; done
rcp -r "$src/many" "$addr:data/"; rc=$?
check "  ... and receives a push of 700 files (exit $rc)" sh -c "[ $rc = 0 ] && diff -r '$src/many' '$exp/many'"
(ulimit -Sn 64; rcp -r "$addr:data/many" "$out/"); rc=$?
check "rcp under ulimit -Sn 64 receives a pull of the 700 files (exit $rc$( [ $rc = 0 ] || echo ": $(head -c 200 "$work/err")"))" \
  sh -c "[ $rc = 0 ] && diff -r '$src/many' '$out/many'"
# A hard limit too low for the copy: the files that find no descriptor fail, and the error says
# what the limit is and how to raise it (util/result.cc), as the RLIMIT_MEMLOCK one does.
# Files above 4 KiB: a small file sent whole (SMALL_FILE) is closed before the next one comes,
# while chunked ones are held open (up to 256) until their last chunk is in.
mkdir -p "$out/hard" "$src/manyb"
for i in $(seq 400); do head -c 5000 /dev/zero > "$src/manyb/m$i"; done
rcp -r "$src/manyb" "$addr:data/" || bad "push of 400 files of 5000 bytes for the pull under ulimit -n 100" "exit $?"
(ulimit -n 100; rcp -r "$addr:data/manyb" "$out/hard/"); rc=$?
check "rcp under ulimit -n 100 (hard) pulling 400 files: exit 23, the error names the limit and how to raise it (exit $rc)" \
  sh -c "[ $rc = 23 ] && grep -q 'Too many open files (RLIMIT_NOFILE allows 100; raise its hard limit: ulimit -Hn as root, LimitNOFILE= for a service)' '$work/err'"
stop_daemon

if cat "$work"/rcpd.*.log | grep -q -E "ERROR: (Address|Leak)Sanitizer|runtime error:"; then
  bad "daemon logs free of sanitizer reports" "$(cat "$work"/rcpd.*.log | grep -m3 -E 'Sanitizer|runtime error')"
else
  ok "daemon logs free of sanitizer reports"
fi
if [ $fail -gt 0 ]; then echo "---- rcpd logs (tail) ----"; tail -n 20 "$work"/rcpd.*.log; fi
echo "limits_suite: $pass passed, $fail failed"
[ $fail = 0 ]
