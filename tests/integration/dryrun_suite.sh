#!/bin/bash
# Issue 10, with real rcpd and rcp processes (TCP on loopback; transport-agnostic, so the
# RDMA tier can run it over verbs): -n/--dry-run changes nothing on either side (files,
# directories, temp files, metadata, --delete) and moves no data (--json bytes_transferred 0),
# and the real run that follows does exactly what the dry run listed (-i lines compared);
# -i's rsync format; a dry run into a directory that does not exist creates nothing.
#
# usage: dryrun_suite.sh --bin DIR --transport tcp|rdma [--addr ADDR] [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args dryrun_suite "$@"
suite_bins dryrun_suite
if [ "$transport" = rdma ] && ! ls /sys/class/infiniband/ 2>/dev/null | grep -q .; then
  echo "dryrun_suite: no RDMA device on this host (run it in tests/vm/rxe-run)" >&2
  exit 77
fi
[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-dryrun.XXXXXX)
mkdir -p "$work"
exp=$work/export out=$work/out src=$work/src
rm -rf "$exp" "$out" "$src"
mkdir -p "$exp" "$out" "$src"
# Its own range (the other suites use 20000-39999 from their pid).
# Below the kernel's ephemeral ports (32768-60999), away from the other suites (20000-32650).
base=$(( 10000 + 4 * ($$ % 1000) ))
rport=$base tport=$((base + 1))
dpid=
cleanup() {
  [ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "dryrun_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
dlog=$work/rcpd.log
(umask 022; exec "$RCPD" --listen "$addr:$tport" -P "$rport" --transport "$transport" \
    --export data="$exp" -v >> "$dlog" 2>&1) &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && break; sleep 0.05; done
rcp() { (umask 022; exec timeout 120 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
# Everything a dry run must leave alone: names (temp files too), types, sizes, modes, mtimes, contents.
snap() { (cd "$1" && find . -mindepth 1 -printf '%p %y %s %m %T@ %l\n' | sort && find . -type f -exec md5sum {} + | sort); }
json_num() { grep -o "\"$1\": *[0-9]*" "$2" | grep -o '[0-9]*$'; }

# A source tree and a destination that differs from it in every way a real run repairs.
mk_src() {
  rm -rf "$src"; mkdir -p "$src/t/sub" "$src/t/newdir/deep"
  head -c 3000000 /dev/urandom > "$src/t/big"
  echo same > "$src/t/same"; echo changed-at-source > "$src/t/changed"
  echo new > "$src/t/newdir/deep/n"; echo s > "$src/t/sub/s"
  ln -s same "$src/t/link"; chmod 0600 "$src/t/sub/s"
  touch -d '2020-01-02 03:04:05' "$src/t/same" "$src/t/sub/s" "$src/t/sub"
}
mk_dst() {  # $1: the destination copy of t
  rm -rf "$1"; mkdir -p "$1/sub" "$1/gone/deeper"
  cp -p "$src/t/same" "$1/same"; echo old > "$1/changed"; echo s > "$1/sub/s"; chmod 0644 "$1/sub/s"
  touch -d '2020-01-02 03:04:05' "$1/sub/s"
  echo extra > "$1/extra"; echo x > "$1/gone/deeper/x"
}
mk_src

# --- push: dry run, then the real run
mk_dst "$exp/t"
before=$(snap "$exp")
rcp -a --delete -n -i -r "$src/t/" "$addr:data/t/" > "$work/dry.out"; rc=$?
check "push -a --delete -n -i: exit 0 (exit $rc)" test $rc = 0
check "  ... the export is unchanged (no file, dir, temp file, mode, mtime, deletion)" \
  test "$before" = "$(snap "$exp")"
check "  ... the daemon logs a dry run" grep -q "put data/t (dry run)" "$dlog"
check "  ... lists the new file as sent (<f+++++++++ big)" grep -qx '<f+++++++++ big' "$work/dry.out"
check "  ... lists the changed file with its size and time (<f.st...... changed)" grep -qx '<f\.st\.\.\.\.\.\. changed' "$work/dry.out"
check "  ... lists a new directory and symlink (cd+++++++++ newdir/, cL+++++++++ link)" \
  bash -c "grep -qx 'cd+++++++++ newdir/' '$work/dry.out' && grep -qx 'cL+++++++++ link' '$work/dry.out'"
check "  ... lists the mode change (.f...p..... sub/s: same size and mtime, so not sent)" \
  bash -c "! grep -q ' sub/s$' '$work/dry.out' || grep -qx '<f\.\.\.p\.\.\.\.\. sub/s' '$work/dry.out'"
check "  ... lists the deletions (*deleting   extra, gone/deeper/x, gone/)" \
  bash -c "grep -qx '\*deleting   extra' '$work/dry.out' && grep -qx '\*deleting   gone/deeper/x' '$work/dry.out' && grep -qx '\*deleting   gone/' '$work/dry.out'"
check "  ... does not list the unchanged file" bash -c "! grep -q ' same$' '$work/dry.out'"
rcp -a --delete -n -r --json "$src/t/" "$addr:data/t/" > "$work/dry.json"; rc=$?
check "push -n --json: exit 0, bytes_transferred 0, files_transferred 4 (big, changed, newdir/deep/n, link)" \
  bash -c "[ $rc = 0 ] && [ '$(json_num bytes_transferred "$work/dry.json")' = 0 ] && [ '$(json_num files_transferred "$work/dry.json")' = 4 ]"
check "  ... files_deleted counts what would go (4: extra, gone/, gone/deeper/, gone/deeper/x)" \
  test "$(json_num files_deleted "$work/dry.json")" = 4
check "  ... the export is still unchanged" test "$before" = "$(snap "$exp")"
rcp -a --delete -i -r "$src/t/" "$addr:data/t/" > "$work/real.out"; rc=$?
check "push -a --delete -i (real): exit 0 (exit $rc)" test $rc = 0
# (sorted: a real run's deletions may come before or after results still in flight)
check "  ... does exactly what the dry run listed" diff <(sort "$work/dry.out") <(sort "$work/real.out")
check "  ... and the destination is the source" diff -r "$src/t" "$exp/t"
rcp -a --delete -i -r "$src/t/" "$addr:data/t/" > "$work/again.out"; rc=$?
check "  ... a second run lists nothing (exit $rc)" bash -c "[ $rc = 0 ] && [ ! -s '$work/again.out' ]"

# --- pull: the same, the client being the sink
mk_dst "$out/t"
before=$(snap "$out")
rcp -a --delete -n -i -r "$addr:data/t/" "$out/t/" > "$work/pdry.out"; rc=$?
check "pull -a --delete -n -i: exit 0 (exit $rc)" test $rc = 0
check "  ... the destination is unchanged" test "$before" = "$(snap "$out")"
check "  ... lists received files as >f (>f+++++++++ big)" grep -qx '>f+++++++++ big' "$work/pdry.out"
check "  ... lists the deletions" grep -qx '\*deleting   extra' "$work/pdry.out"
rcp -a --delete -i -r "$addr:data/t/" "$out/t/" > "$work/preal.out"; rc=$?
check "pull (real): exit 0, does exactly what the dry run listed" \
  bash -c "[ $rc = 0 ] && diff <(sort '$work/pdry.out') <(sort '$work/preal.out')"
check "  ... and the destination is the source" diff -r "$src/t" "$out/t"

# --- a dry run into directories that do not exist creates nothing
rcp -r -n "$src/t" "$addr:data/nosuch/below/" > "$work/miss.out"; rc=$?
check "push -n into a missing directory: exit 0, nothing created (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ ! -e '$exp/nosuch' ]"
check "  ... lists every entry as new (names, as rsync -n)" \
  bash -c "grep -qx 't/big' '$work/miss.out' && grep -qx 't/newdir/deep/' '$work/miss.out'"
rcp -r -n "$addr:data/t" "$out/missing/below/" > "$work/pmiss.out"; rc=$?
check "pull -n into a missing directory: exit 0, nothing created (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ ! -e '$out/missing' ] && grep -qx 't/big' '$work/pmiss.out'"

# --- --delete-after and -i without -n
mk_dst "$exp/u"; cp -a "$src/t/." "$exp/u/" 2>/dev/null; echo more > "$exp/u/late"
before=$(snap "$exp")
rcp -r --delete-after -n -i "$src/t/" "$addr:data/u/" > "$work/da.out"; rc=$?
after=$(snap "$exp")
check "push --delete-after -n: nothing removed, the removals listed (exit $rc)" \
  bash -c "[ $rc = 0 ] && grep -qx '\*deleting   late' '$work/da.out'"
check "  ... the export is unchanged" test "$before" = "$after"
rcp -r --delete-after -i "$src/t/" "$addr:data/u/" > "$work/dareal.out"; rc=$?
check "  ... the real run removes exactly those" \
  bash -c "[ $rc = 0 ] && diff <(grep deleting '$work/da.out') <(grep deleting '$work/dareal.out') && [ ! -e '$exp/u/late' ]"

# --- --bwlimit: the bytes still all cross, and the copy cannot be faster than the limit
# allows. Only a lower bound on the time is checked (a loaded host only makes it slower):
# 3 MiB at 1 MiB/s in 256 KiB chunks, the bucket holding one chunk and letting one more go
# on credit, takes at least (3 MiB - 2 x 256 KiB) / 1 MiB/s = 2.5 s; checked against 2.0.
head -c $((3 << 20)) /dev/urandom > "$src/paced"
rcp --bwlimit 1M --chunk-size 256 --json "$src/paced" "$addr:data/paced" > "$work/bw.json"; rc=$?
el=$(grep -o '"elapsed_s": *[0-9.]*' "$work/bw.json" | grep -o '[0-9.]*$')
check "push --bwlimit 1M of 3 MiB: exit 0, all bytes sent, byte-identical (exit $rc)" \
  bash -c "[ $rc = 0 ] && [ '$(json_num bytes_transferred "$work/bw.json")' = $((3 << 20)) ] && cmp -s '$src/paced' '$exp/paced'"
check "  ... took at least 2.0 s (elapsed_s $el)" awk -v e="${el:-0}" 'BEGIN { exit !(e >= 2.0) }'
rm -f "$out/paced"
rcp --bwlimit 1024 --chunk-size 256 --json "$addr:data/paced" "$out/paced" > "$work/bwp.json"; rc=$?
el=$(grep -o '"elapsed_s": *[0-9.]*' "$work/bwp.json" | grep -o '[0-9.]*$')
check "pull --bwlimit 1024 (KiB/s) of 3 MiB: exit 0, byte-identical, at least 2.0 s (elapsed_s $el)" \
  bash -c "[ $rc = 0 ] && cmp -s '$src/paced' '$out/paced' && awk -v e='${el:-0}' 'BEGIN { exit !(e >= 2.0) }'"
# Small files sent whole (SMALL_FILE) by a daemon without a limit: the pulling client's limit
# holds them back as it does chunks. 40 x 1000 bytes at 8 KiB/s, the bucket one second (8 KiB)
# plus one more on credit: at least (40,000 - 16,384) / 8,192 = 2.9 s; checked against 2.0.
mkdir -p "$exp/pacedsmall"
for i in $(seq 40); do head -c 1000 /dev/urandom > "$exp/pacedsmall/s$i"; done
rcp -r --bwlimit 8 --json "$addr:data/pacedsmall" "$out/" > "$work/bws.json"; rc=$?
el=$(grep -o '"elapsed_s": *[0-9.]*' "$work/bws.json" | grep -o '[0-9.]*$')
check "pull -r --bwlimit 8 (KiB/s) of 40 small files: exit 0, identical, at least 2.0 s (elapsed_s $el)" \
  bash -c "[ $rc = 0 ] && diff -r '$exp/pacedsmall' '$out/pacedsmall' && awk -v e='${el:-0}' 'BEGIN { exit !(e >= 2.0) }'"
rcp --bwlimit 10q "$src/paced" "$addr:data/paced2" > /dev/null; rc=$?
check "--bwlimit 10q is refused as usage (exit $rc), nothing sent" \
  bash -c "[ $rc = 1 ] && grep -q 'not a rate' '$work/err' && [ ! -e '$exp/paced2' ]"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
