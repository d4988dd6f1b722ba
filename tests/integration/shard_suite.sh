#!/bin/bash
# Issue 15, every host of a job: rcp --shard I/N with real rcpd and rcp processes (TCP on
# loopback; the script is transport-agnostic, so the RDMA tier can run it over verbs).
#  - a tree of 2,000 files pushed as 4 shards run at once by GNU parallel (the shipped
#    packaging/examples/parallel-shards.sh) against one rcpd: the union is the source, no
#    file copied twice (files_transferred sums to 2,000), the merged report adds up;
#  - the same list pulled as 3 shards (split by name): the union is the source;
#  - a rerun of a shard copies nothing (idempotent: the quick check skips every file);
#  - the push split is by bytes: one big file and many small ones balance;
#  - --shard refused without --files-from, with --delete, and outside 0 <= I < N <= 65536;
#  - rcp-merge-reports names a missing or repeated shard and a failed one (exit 1).
# Without GNU parallel the 4 shards are run by xargs -P 4 and a loud SKIP line says so.
#
# usage: shard_suite.sh --bin DIR [--transport tcp|rdma] [--addr ADDR] [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args shard_suite "$@"
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
suite_bins shard_suite
MERGE=$top/packaging/rcp-merge-reports
EXAMPLES=$top/packaging/examples
[ -x "$MERGE" ] || MERGE=/usr/bin/rcp-merge-reports
[ -d "$EXAMPLES" ] || EXAMPLES=/usr/share/doc/rcp/examples
command -v jq > /dev/null || { echo "shard_suite: jq is needed (rcp-merge-reports)" >&2; exit 2; }
[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-shard.XXXXXX)
mkdir -p "$work"
exp=$work/export out=$work/out src=$work/src
rm -rf "$exp" "$out" "$src"
mkdir -p "$exp" "$out" "$src"
# (Its own range, above the other suites' 20000..40010.)
# Below the kernel's ephemeral ports (32768-60999), away from the other suites.
base=$(( 14000 + ($$ % 1000) * 4 ))
rport=$base tport=$((base + 1))
dpid=
cleanup() {
  [ -n "$dpid" ] && kill -TERM "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "shard_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
dlog=$work/rcpd.log
(umask 022; exec "$RCPD" --listen "$addr:$tport" -P "$rport" --transport "$transport" \
    --export data="$exp" -v >> "$dlog" 2>&1) &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && break; sleep 0.05; done
rcp() { (umask 022; exec timeout 120 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
jget() { jq -r "$1" "$2"; }

# --- the tree: 2,000 files in 20 directories, sizes 0 .. ~40 KiB (and a few of 1 MiB)
tree=$src/tree
for d in $(seq -w 0 19); do
  mkdir -p "$tree/d$d"
  for f in $(seq -w 0 99); do
    n=$(( (10#$d * 100 + 10#$f) * 397 % 40000 ))
    [ $(( 10#$f % 50 )) = 7 ] && n=$((1 << 20))
    head -c "$n" /dev/urandom > "$tree/d$d/f$f"
  done
done
(cd "$tree" && find . -type f -print0 | sort -z) > "$work/list0"
(cd "$tree" && find . -type f | sort) > "$work/list"
check "the source: 2,000 files" test "$(wc -l < "$work/list")" = 2000

# --- 4 shards at once by GNU parallel (the shipped example), pushed to one rcpd
mkdir -p "$exp/push"
reports=$work/reports; mkdir -p "$reports"
if command -v parallel > /dev/null; then
  RCP="$RCP" RCP_MERGE_REPORTS="$MERGE" bash "$EXAMPLES/parallel-shards.sh" 4 "$tree" "$work/list0" \
      "$addr:data/push" -- --transport "$transport" -P "$rport" --tcp-port "$tport" \
      > "$work/merged.json" 2> "$work/err"; rc=$?
  check "parallel-shards.sh 4 shards: exit 0 (exit $rc)" test $rc = 0
  # (The per-shard reports, for the checks below: the merged one carries them in per_shard.)
  for i in 0 1 2 3; do jq -c ".per_shard[$i]" "$work/merged.json" > "$reports/$i.json"; done
else
  echo "SKIP: GNU parallel is not installed (scripts/install-deps.sh installs it): the 4 shards run by xargs -P 4 instead"
  seq 0 3 | xargs -P 4 -I{} sh -c "timeout 120 '$RCP' --transport $transport -P $rport --tcp-port $tport \
      --shard {}/4 --files-from '$work/list0' --from0 --json '$tree' '$addr:data/push' > '$reports/{}.full.json' 2>> '$work/err'"
  "$MERGE" "$reports"/*.full.json > "$work/merged.json"; rc=$?
  check "xargs 4 shards, merged: exit 0 (exit $rc)" test $rc = 0
  for i in 0 1 2 3; do jq -c ".per_shard[$i]" "$work/merged.json" > "$reports/$i.json"; done
fi
check "  ... the union of the shards is the source, byte for byte" diff -r "$tree" "$exp/push"
sum=0; for i in 0 1 2 3; do sum=$((sum + $(jget .files_transferred "$reports/$i.json"))); done
check "  ... the shards' files_transferred sum to 2,000 (no file twice): $sum" test "$sum" = 2000
for i in 0 1 2 3; do
  n=$(jget .files_transferred "$reports/$i.json")
  check "  ... shard $i/4 copied a part ($n files)" test "$n" -gt 0 -a "$n" -lt 2000
done
src_bytes=$(find "$tree" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
check "  ... merged: 4 reports of 4 shards, none missing" \
  test "$(jq -c '[.reports, .shards, .missing_shards, .repeated_shards]' "$work/merged.json")" = '[4,4,[],[]]'
check "  ... merged: files_transferred 2000, bytes_transferred $src_bytes, exit_code 0" \
  test "$(jq -c '[.files_transferred, .bytes_transferred, .files_failed, .exit_code]' "$work/merged.json")" = "[2000,$src_bytes,0,0]"
check "  ... merged: bytes_transferred is the shards' sum, elapsed_s their maximum" \
  test "$(jq '[.per_shard[].bytes_transferred] | add' "$work/merged.json")" = "$src_bytes" -a \
       "$(jq '(.elapsed_s == ([.per_shard[].elapsed_s] | max)) and .mb_per_s > 0' "$work/merged.json")" = true
# By bytes, not by count: every shard within the mean plus the largest file (1 MiB).
loads=$(jq -r '[.per_shard[].bytes_transferred] | "\(max) \(add / length | floor)"' "$work/merged.json")
read -r maxl mean <<< "$loads"
check "  ... balanced by bytes: heaviest shard $maxl <= mean $mean + 1 MiB" test "$maxl" -le $((mean + (1 << 20)))

# --- idempotent: a shard run again copies nothing (the quick check skips it all)
rcp --shard 2/4 --files-from "$work/list0" --from0 --json "$tree" "$addr:data/push" > "$work/again.json"; rc=$?
check "rerun of shard 2/4: exit 0, nothing transferred, its files skipped (exit $rc)" \
  test "$rc" = 0 -a "$(jq -c '[.files_transferred, .bytes_transferred, .files_skipped > 0, .shard]' "$work/again.json")" = '[0,0,true,"2/4"]'
# A file lost at the destination: only its shard brings it back.
victim=d03/f42
rm -f "$exp/push/$victim"
back=
for i in 0 1 2 3; do
  rcp --shard "$i/4" --files-from "$work/list" --json "$tree" "$addr:data/push" > "$work/re$i.json"
  [ "$(jget .files_transferred "$work/re$i.json")" = 1 ] && back="$back$i"
done
check "a deleted file: one shard of the 4 reruns copies it, the others nothing (shard '$back')" \
  bash -c "[ ${#back} = 1 ] && cmp -s '$tree/$victim' '$exp/push/$victim'"

# --- pull: the same list from the daemon, 3 shards (split by name)
mkdir -p "$out/pull"
psum=0
for i in 0 1 2; do
  rcp --shard "$i/3" --files-from "$work/list" --json "$addr:data/push" "$out/pull" > "$work/pull$i.json"; rc=$?
  [ $rc = 0 ] || bad "pull shard $i/3: exit $rc"
  psum=$((psum + $(jget .files_transferred "$work/pull$i.json")))
done
check "pull as 3 shards: the union is the source, 2,000 files transferred once ($psum)" \
  bash -c "[ $psum = 2000 ] && diff -r '$tree' '$out/pull'"
"$MERGE" "$work"/pull?.json > "$work/pullm.json"; rc=$?
check "  ... the merged pull report: exit 0, 3 shards, 2,000 files ($rc)" test $rc = 0 -a "$(jq -c "[.shards, .files_transferred]" "$work/pullm.json")" = "[3,2000]"

# --- by bytes on a push: 1 file of 4 MiB and 64 of 64 KiB, 2 shards: 4 MiB each
mkdir -p "$src/skew" "$exp/skew"
head -c $((4 << 20)) /dev/urandom > "$src/skew/big"
for i in $(seq -w 1 64); do head -c 65536 /dev/urandom > "$src/skew/s$i"; done
(cd "$src/skew" && ls) > "$work/skew.list"
for i in 0 1; do rcp --shard "$i/2" --files-from "$work/skew.list" --json "$src/skew" "$addr:data/skew" > "$work/skew$i.json"; done
check "push of one 4 MiB and 64 small files as 2 shards: 4 MiB each, 1 file and 64 files" \
  test "$(jq -s -c 'map([.files_transferred, .bytes_transferred]) | sort' "$work"/skew?.json)" = "[[1,$((4 << 20))],[64,$((4 << 20))]]"
check "  ... and together the source" diff -r "$src/skew" "$exp/skew"
# More shards than files: the extra shards copy nothing, and say so with exit 0.
echo big > "$work/one.list"
rcp --shard 5/8 --files-from "$work/one.list" --json "$src/skew" "$addr:data/skew8" > "$work/empty.json"; rc1=$?
check "a shard with no file of the list: exit 0, 0 files ($rc1)" test "$rc1" = 0 -a "$(jget .files_transferred "$work/empty.json")" = 0

# --- refusals (exit 1, usage, before connecting)
expect_usage() {
  local name=$1 want=$2; shift 2
  rcp "$@" > /dev/null; local rc=$?
  if [ $rc = 1 ] && grep -q -- "$want" "$work/err"; then ok "$name"; else bad "$name" "exit $rc"; fi
}
expect_usage "--shard without --files-from: refused" "splits a --files-from list" --shard 0/2 -r "$tree" "$addr:data/x"
expect_usage "--shard with --delete: refused" "exclude each other" --shard 0/2 --delete --files-from "$work/list" "$tree" "$addr:data/x"
expect_usage "--shard 4/4: refused (I below N)" "below N" --shard 4/4 --files-from "$work/list" "$tree" "$addr:data/x"
expect_usage "--shard 0/0: refused" "at least 1" --shard 0/0 --files-from "$work/list" "$tree" "$addr:data/x"
expect_usage "--shard 0/70000: refused (N at most 65536)" "at most 65536" --shard 0/70000 --files-from "$work/list" "$tree" "$addr:data/x"
expect_usage "--shard x: refused" "expected I/N" --shard x --files-from "$work/list" "$tree" "$addr:data/x"

# --- rcp-merge-reports names what is wrong with a job
"$MERGE" "$work/skew0.json" > "$work/m1.json"; rc=$?
check "merge of 1 of 2 shards: exit 1, shard 1 missing" test $rc = 1 -a "$(jq -c .missing_shards "$work/m1.json")" = '[1]'
"$MERGE" "$work/skew0.json" "$work/skew0.json" "$work/skew1.json" > "$work/m2.json"; rc=$?
check "merge with shard 0 twice: exit 1, repeated [0]" test $rc = 1 -a "$(jq -c .repeated_shards "$work/m2.json")" = '[0]'
jq -c '.exit_code = 23 | .files_failed = 1 | .errors = ["d/x: gone"]' "$work/skew1.json" > "$work/failed.json"
"$MERGE" "$work/skew0.json" "$work/failed.json" > "$work/m3.json"; rc=$?
check "merge with a failed shard: exit 1, exit_code 23, its error named by shard" \
  test $rc = 1 -a "$(jq -c '[.exit_code, .files_failed, .errors]' "$work/m3.json")" = '[23,1,["shard 1/2: d/x: gone"]]'
echo '{"not":"a report"}' | "$MERGE" > /dev/null 2>&1; rc=$?
check "merge of something else: exit 2" test $rc = 2

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
