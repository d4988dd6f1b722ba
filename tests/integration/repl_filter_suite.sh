#!/bin/bash
# Issue 10, with real rcpd and rcp processes (TCP on loopback; the RDMA tier runs it over verbs):
# many sources in one session (named pulls, --files-from, --from0), --exclude/--include/
# --exclude-from on both sides, --delete/--delete-after (only inside the directories copied,
# excluded entries protected, never outside, never through a symlink, refused by a read-only
# module), and a client whose memory stays flat as the tree grows.
#
# usage: repl_filter_suite.sh --bin DIR --transport tcp|rdma [--addr ADDR] [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args repl_filter_suite "$@"
suite_bins repl_filter_suite
if [ "$transport" = rdma ] && ! ls /sys/class/infiniband/ 2>/dev/null | grep -q .; then
  echo "repl_filter_suite: no RDMA device on this host (run it in tests/vm/rxe-run)" >&2
  exit 77
fi
[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-filter.XXXXXX)
mkdir -p "$work"
exp=$work/export out=$work/out src=$work/src outside=$work/outside ro=$work/ro
rm -rf "$exp" "$out" "$src" "$outside" "$ro"
mkdir -p "$exp" "$out" "$src" "$outside" "$ro"
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$base tport=$((base + 1)) rport2=$((base + 2)) tport2=$((base + 3))
dpid= dpid2=
cleanup() {
  for p in $dpid $dpid2; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "repl_filter_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
dlog=$work/rcpd.log
(umask 022; exec "$RCPD" --listen "$addr:$tport" -P "$rport" --transport "$transport" \
    --export data="$exp" -v >> "$dlog" 2>&1) &
dpid=$!
# A second daemon with a read-only module (the default in rcpd.conf).
cat > "$work/ro.conf" <<CONF
[modules.ro]
path = "$ro"
CONF
"$RCPD" --config "$work/ro.conf" --listen "$addr:$tport2" -P "$rport2" --transport "$transport" -v > "$work/rcpd2.log" 2>&1 &
dpid2=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" "$work/rcpd2.log" 2>/dev/null && [ "$(grep -l 'rcpd: ready' "$dlog" "$work/rcpd2.log" | wc -l)" = 2 ] && break; sleep 0.05; done
rcp() { (umask 022; exec timeout 120 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
sessions() { grep -c " get \| put " "$dlog"; }  # one log line per session (rcpd -v)
# Sessions logged since BEFORE. rcpd logs a session once it has ended, which can come just after
# the client exits (CI under load saw "daemon saw 0"): wait up to 5 s for the first line, then
# 0.3 s more so a second session's line would be counted too.
sessions_since() {
  for _ in $(seq 100); do [ "$(sessions)" -gt "$1" ] && break; sleep 0.05; done
  sleep 0.3; echo $(( $(sessions) - $1 ))
}
same_tree() { diff -r "$1" "$2" > /dev/null; }
listing() { (cd "$1" && find . -mindepth 1 | sort | tr '\n' ' '); }

# --- many named files: one pull is one session and one connection
mkdir -p "$exp/many"
for i in $(seq -w 1 50); do echo "file $i" > "$exp/many/f$i"; done
before=$(sessions)
args=(); for i in $(seq -w 1 50); do args+=("$addr:data/many/f$i"); done
mkdir -p "$out/many"
rcp "${args[@]}" "$out/many/"; rc=$?
after=$((before + $(sessions_since "$before")))
check "pull of 50 named files: exit 0 (exit $rc)" test $rc = 0
check "  ... every file byte-exact" same_tree "$exp/many" "$out/many"
check "  ... in one session (daemon saw $((after - before)))" test $((after - before)) = 1
# Sources in another module, or a missing one among them: the others still go, exit 23 as rsync's.
mkdir -p "$out/some"
rcp "$addr:data/many/f01" "$addr:data/many/nosuch" "$addr:data/many/f02" "$out/some/"; rc=$?
check "pull with one missing source among three: exit 23, the others copied (exit $rc)" \
  bash -c "[ $rc = 23 ] && cmp -s '$exp/many/f01' '$out/some/f01' && cmp -s '$exp/many/f02' '$out/some/f02' && grep -q nosuch '$work/err'"
# Many sources pushed: one session as well.
mkdir -p "$src/a" "$src/b" "$exp/pushed"; echo 1 > "$src/a/x"; echo 2 > "$src/b/y"; echo 3 > "$src/c"
before=$(sessions)
rcp -r "$src/a" "$src/b" "$src/c" "$addr:data/pushed/"; rc=$?
n=$(sessions_since "$before")
check "push -r a b c: one session, all there (exit $rc, $n session(s))" \
  bash -c "[ $rc = 0 ] && [ $n = 1 ] && cmp -s '$src/a/x' '$exp/pushed/a/x' && cmp -s '$src/c' '$exp/pushed/c'"

# --- --files-from: paths relative to the source directory, kept as paths (rsync's semantics)
mkdir -p "$src/ff/d1/d2" "$src/ff/emptyd" "$src/ff/tree/sub"
echo a > "$src/ff/d1/d2/deep.txt"; echo b > "$src/ff/top.txt"; echo c > "$src/ff/notlisted.txt"
echo d > "$src/ff/tree/sub/t.txt"
printf 'd1/d2/deep.txt\n/top.txt\n\nemptyd\n' > "$work/list"
mkdir -p "$exp/ffpush"
rcp --files-from "$work/list" "$src/ff" "$addr:data/ffpush/"; rc=$?
check "push --files-from: listed paths arrive under their paths, nothing else (exit $rc)" \
  bash -c "[ $rc = 0 ] && cmp -s '$src/ff/d1/d2/deep.txt' '$exp/ffpush/d1/d2/deep.txt' && cmp -s '$src/ff/top.txt' '$exp/ffpush/top.txt' \
           && [ -d '$exp/ffpush/emptyd' ] && [ ! -e '$exp/ffpush/notlisted.txt' ]"
cp -r "$src/ff" "$exp/ffsrc"
mkdir -p "$out/ffpull"
printf 'd1/d2/deep.txt\0tree\0' > "$work/list0"
rcp -r --from0 --files-from "$work/list0" "$addr:data/ffsrc" "$out/ffpull/"; rc=$?
check "pull -r --files-from --from0: listed paths (a tree with -r), nothing else (exit $rc)" \
  bash -c "[ $rc = 0 ] && cmp -s '$src/ff/d1/d2/deep.txt' '$out/ffpull/d1/d2/deep.txt' && cmp -s '$src/ff/tree/sub/t.txt' '$out/ffpull/tree/sub/t.txt' \
           && [ ! -e '$out/ffpull/top.txt' ]"
printf 'top.txt\n../outside-secret\n' > "$work/badlist"
echo secret > "$work/outside-secret"
mkdir -p "$exp/ffbad" "$out/ffbad"
rcp --files-from "$work/badlist" "$src/ff" "$addr:data/ffbad/" ; rc=$?
rcp --files-from "$work/badlist" "$addr:data/ffsrc" "$out/ffbad/" ; rc2=$?
check "a --files-from path with '..' is refused naming its line, both ways (exit $rc, $rc2)" \
  bash -c "[ $rc != 0 ] && [ $rc2 != 0 ] && grep -q 'line 2' '$work/err' && [ ! -e '$exp/outside-secret' ] && [ ! -e '$out/outside-secret' ]"

# A peer that skips the client's cleaning: the daemon cleans and confines every path of the list.
rawpeer=$(cd "$bin/.." && pwd)/tests/rawpeer
if [ "$transport" = tcp ] && [ -x "$rawpeer" ]; then
  timeout 30 "$rawpeer" "$addr" "$tport" open-get data/many/f01 ../outside-secret > "$work/raw" 2>&1
  check "a raw OPEN listing '../outside-secret' is refused by the daemon, nothing sent" \
    bash -c "grep -q \"refused: refused path '../outside-secret'\" '$work/raw' && ! grep -q '^sent' '$work/raw'"
  timeout 30 "$rawpeer" "$addr" "$tport" open-get-relative data/ffsrc top.txt /etc/passwd > "$work/raw" 2>&1
  check "a raw --files-from OPEN listing an absolute path is refused" \
    bash -c "grep -q 'refused: .*absolute' '$work/raw' && ! grep -q '^sent' '$work/raw'"
  timeout 30 "$rawpeer" "$addr" "$tport" open-get-relative data/ffsrc top.txt d1/./d2/deep.txt > "$work/raw" 2>&1
  check "  ... while clean ones are sent under their cleaned names" \
    bash -c "grep -q '^sent: top.txt' '$work/raw' && grep -q '^sent: d1/d2/deep.txt' '$work/raw'"
  timeout 30 "$rawpeer" "$addr" "$tport" open-get-relative data/ffsrc top.txt ./ > "$work/raw" 2>&1
  check "a raw --files-from OPEN listing a path that cleans to nothing ('./') is refused" \
    bash -c "grep -q 'refused: refused an empty path in the list' '$work/raw' && ! grep -q '^sent' '$work/raw'"
  timeout 30 "$rawpeer" "$addr" "$tport" open-get-relative data/ffsrc > "$work/raw" 2>&1
  check "a raw --files-from OPEN listing no path at all is refused" \
    bash -c "grep -q 'refused: a --files-from OPEN without paths' '$work/raw' && ! grep -q '^sent' '$work/raw'"
fi

# --- filters: rsync's rules on the sending side, whichever side that is
mkdir -p "$src/ft/keep/sub" "$src/ft/build" "$src/ft/logs"
for f in a.c b.o keep/k.c keep/k.o keep/sub/s.c build/out.bin logs/x.log top.log; do echo "$f" > "$src/ft/$f"; done
mkdir -p "$exp/ftpush"
rcp -r --exclude '*.o' --exclude 'build/' --exclude '/ft/top.log' "$src/ft" "$addr:data/ftpush/"; rc=$?
check "push --exclude: *.o, a directory, an anchored path left out (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ '$(listing "$exp/ftpush")' = './ft ./ft/a.c ./ft/keep ./ft/keep/k.c ./ft/keep/sub ./ft/keep/sub/s.c ./ft/logs ./ft/logs/x.log ' ]"
cp -r "$src/ft" "$exp/ftsrc"
mkdir -p "$out/ftpull"
printf '# only C sources\n+ */\n+ *.c\n- *\n' > "$work/rules"
rcp -r --exclude-from "$work/rules" "$addr:data/ftsrc" "$out/ftpull/"; rc=$?
check "pull --exclude-from (rules applied by the daemon, first match wins) (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ '$(listing "$out/ftpull")' = './ftsrc ./ftsrc/a.c ./ftsrc/build ./ftsrc/keep ./ftsrc/keep/k.c ./ftsrc/keep/sub ./ftsrc/keep/sub/s.c ./ftsrc/logs ' ]"
mkdir -p "$out/ftorder"
rcp -r --include 'k.o' --exclude '*.o' "$addr:data/ftsrc" "$out/ftorder/"; rc=$?
check "--include before --exclude: the first matching rule wins (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ -e '$out/ftorder/ftsrc/keep/k.o' ] && [ ! -e '$out/ftorder/ftsrc/b.o' ]"

# --- --delete: extraneous entries removed only inside the directories copied
setup_dest() {  # DIR: a copy of src/del plus extraneous entries, a sibling outside, a symlink out
  mkdir -p "$1/del/sub" "$1/del/gone/deeper"
  cp -r "$src/del/." "$1/del/"
  echo x > "$1/del/extra.txt"; echo x > "$1/del/sub/extra2"; echo x > "$1/del/gone/deeper/f"
  echo keep > "$1/del/protected.bak"
  ln -sfn "$outside" "$1/del/link-out"
  echo sibling > "$1/sibling.txt"
}
mkdir -p "$src/del/sub"; echo 1 > "$src/del/a"; echo 2 > "$src/del/sub/b"
echo precious > "$outside/precious"
want='./del ./del/a ./del/protected.bak ./del/sub ./del/sub/b ./sibling.txt '
mkdir -p "$exp/delpush"; setup_dest "$exp/delpush"
rcp -r -v --delete --exclude '*.bak' "$src/del" "$addr:data/delpush/"; rc=$?
check "push --delete: extra file, dir tree and symlink gone; excluded and sibling kept (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ '$(listing "$exp/delpush")' = '$want' ] && [ -e '$outside/precious' ]"
check "  ... the count reported (6 entries)" grep -q "deleted 6 entries" "$work/err"
# With repl-delta's quick check: a second --delete push sends nothing unchanged, and
# --json counts what it deleted.
echo x > "$exp/delpush/del/extra3"
rcp -r --delete --exclude '*.bak' --json "$src/del" "$addr:data/delpush/" > "$work/json"; rc=$?
check "  ... again with --json: unchanged files skipped, 1 deleted, in the report (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ ! -e '$exp/delpush/del/extra3' ] && grep -q '\"files_deleted\":1,' '$work/json' \
           && grep -q '\"files_transferred\":0,' '$work/json' && grep -q '\"files_skipped\":2,' '$work/json'"
mkdir -p "$out/delpull"; setup_dest "$out/delpull"; cp -r "$src/del" "$exp/del"
rcp -r --delete-after --exclude '*.bak' "$addr:data/del" "$out/delpull/"; rc=$?
check "pull --delete-after: the same, done by the client (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ '$(listing "$out/delpull")' = '$want' ] && [ -e '$outside/precious' ]"
echo x > "$out/delpull/del/extra3"
rcp -r --delete-after --exclude '*.bak' --json "$addr:data/del" "$out/delpull/" > "$work/json"; rc=$?
check "  ... again with --json: unchanged files skipped, 1 deleted, in the report (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ ! -e '$out/delpull/del/extra3' ] && grep -q '\"files_deleted\":1,' '$work/json' \
           && grep -q '\"files_transferred\":0,' '$work/json' && grep -q '\"files_skipped\":2,' '$work/json'"
mkdir -p "$out/nodel"; setup_dest "$out/nodel"
rcp -r "$addr:data/del" "$out/nodel/"; rc=$?
check "without --delete nothing is removed" test -e "$out/nodel/del/extra.txt" -a -e "$out/nodel/del/gone/deeper/f"
# The destination directory itself is pruned only when it is what is copied (the export's root).
mkdir -p "$work/rootexp/d"; echo r > "$work/rootexp/d/f"
"$RCPD" --listen "$addr:$((tport + 10))" -P "$((rport + 10))" --transport "$transport" --export root="$work/rootexp" > "$work/rcpd3.log" 2>&1 &
dpid3=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/rcpd3.log" && break; sleep 0.05; done
mkdir -p "$out/rootdel"; echo x > "$out/rootdel/stray"
(umask 022; timeout 60 "$RCP" --transport "$transport" -P "$((rport + 10))" --tcp-port "$((tport + 10))" -r --delete \
   "$addr:root/" "$out/rootdel/" 2> "$work/err"); rc=$?
kill -TERM $dpid3; wait $dpid3 2>/dev/null
check "pull --delete of an export's root prunes DEST itself (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ -e '$out/rootdel/d/f' ] && [ ! -e '$out/rootdel/stray' ]"
# A read-only module refuses a --delete push before anything is written or removed.
mkdir -p "$ro/del"; echo x > "$ro/del/extra.txt"
(timeout 60 "$RCP" --transport "$transport" -P "$rport2" --tcp-port "$tport2" -r --delete "$src/del" "$addr:ro/" 2> "$work/err"); rc=$?
check "push --delete to a read-only module: refused, exit 3, nothing removed (exit $rc)" \
  bash -c "[ $rc = 3 ] && [ -e '$ro/del/extra.txt' ]"
rcp --delete "$src/del/a" "$addr:data/x"; rc=$?
check "--delete without -r is a usage error (exit $rc)" test $rc = 1

# --- memory stays flat as the tree grows (the walk streams): the client's peak RSS for 20,000
# files is within 3 MiB of its peak for 2,000 (it grew 0.4 KiB per file when the walk listed the
# whole tree first: +7 MiB here), and within pool + 32 MiB. Not under ASan (its quarantine keeps
# freed memory).
if grep -q __asan_init "$RCP" 2>/dev/null; then
  echo "SKIP memory check: sanitizer build"
else
  mem=/dev/shm; [ -w "$mem" ] || mem=$work
  t=$(mktemp -d "$mem/rcp-memtree.XXXXXX")
  python3 - "$t" <<'PY'
import os, sys
root = sys.argv[1]
for name, dirs in (("small", 2), ("big", 20)):
    for d in range(dirs):
        os.makedirs(f"{root}/{name}/d{d:02d}")
        for i in range(1000):
            with open(f"{root}/{name}/d{d:02d}/f{i:04d}", "wb") as f: f.write(b"x" * 64)
PY
  mkdir -p "$exp/mem"
  peak() {  # TREE: pushes it with a 256 KiB pool (64 KiB chunks x 4), prints the client's peak RSS in KiB
    /usr/bin/time -f %M -o "$work/rss" timeout 300 "$RCP" -q --transport "$transport" -P "$rport" --tcp-port "$tport" \
      --chunk-size 64 --window 4 -r "$t/$1" "$addr:data/mem/" 2> "$work/err" || echo "push of $1 failed" >&2
    tail -1 "$work/rss"
  }
  small=$(peak small) big=$(peak big)
  n=$(find "$exp/mem/big" -type f | wc -l)
  check "push -r of 20,000 files: all there, client peak RSS $big KiB (2,000 files: $small KiB): +<= 3 MiB, <= pool + 32 MiB" \
    bash -c "[ $n = 20000 ] && [ $((big - small)) -le 3072 ] && [ $big -le $((256 + 32 * 1024)) ]"
  rm -rf "$t"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
