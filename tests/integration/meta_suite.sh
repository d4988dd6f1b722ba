#!/bin/bash
# Faithful copies (issue 10): a tree with every kind of entry — odd names (spaces, newline,
# leading dash, UTF-8, 255 bytes), empty files and directories, a hard-link group, modes 0600/0755/0444/0700,
# fixed nanosecond mtimes, relative/absolute/dangling symlinks and one to a directory, a FIFO,
# a read-only directory, 40-deep nesting — pushed and pulled with `rcp -aH` through real rcpd and
# rcp processes (TCP on loopback, or verbs in the soft-RoCE guest) is what `rsync -aH` makes of
# it locally: types, contents, modes, mtimes to the nanosecond, symlink targets, owners.
#
# usage: meta_suite.sh --bin DIR --transport tcp|rdma [--addr ADDR] [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args meta_suite "$@"
suite_bins meta_suite
command -v rsync > /dev/null || { echo "meta_suite: rsync is needed as the reference" >&2; exit 2; }
command -v python3 > /dev/null || { echo "meta_suite: python3 is needed to compare trees" >&2; exit 2; }

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-meta.XXXXXX)
mkdir -p "$work"
exp=$work/export src=$work/src
chmod -R u+rwx "$work" 2>/dev/null; rm -rf "${work:?}"/*  # a kept run's leftovers
mkdir -p "$exp" "$src" "$work/ref" "$work/pull"
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$((base + 7)) tport=$((base + 8))
dpid=
cleanup() {
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  chmod -R u+rwx "$work" 2>/dev/null
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "meta_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
(umask 077; exec "$RCPD" --listen "$addr:$tport" -P "$rport" --transport "$transport" --export data="$exp" -v \
   >> "$work/rcpd.log" 2>&1) &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/rcpd.log" 2>/dev/null && break; sleep 0.05; done
rcp() { (umask 027; exec timeout 120 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }

# ---- the tree
t=$src/tree
mkdir -p "$t/sub/empty_dir" "$t/ro"
echo hello > "$t/sub/file"
: > "$t/empty"
echo space > "$t/with space"
printf 'nl' > "$t/new
line"
echo dash > "$t/-leading-dash"
echo utf > "$t/résumé-日本語.txt"
long=$(printf 'n%.0s' $(seq 255)); echo long > "$t/$long"
for m in 0600 0755 0444 0700; do echo "$m" > "$t/mode$m"; chmod "$m" "$t/mode$m"; done
mkdir "$t/dir0700"; chmod 0700 "$t/dir0700"
for s in 0 1 4095 4096 4097 65536 1048577; do head -c "$s" /dev/urandom > "$t/size$s"; done
echo inside > "$t/ro/f"
ln -s sub/file "$t/rel_link"
ln -s /etc/hostname "$t/abs_link"
ln -s does/not/exist "$t/dangling"
ln -s sub "$t/dir_link"
mkfifo "$t/fifo"
echo linked > "$t/hard1"; ln "$t/hard1" "$t/sub/hard2"; ln "$t/hard1" "$t/hard3"
d=$t/deep; for i in $(seq 40); do d=$d/d$i; done; mkdir -p "$d"; echo bottom > "$d/f"
find "$t" -exec touch -h -d "2001-02-03 04:05:06.123456789" {} +
touch -h -d "1999-12-31 23:59:59.000000001" "$t/rel_link" "$t/mode0444"
touch -d "2020-06-07 08:09:10.987654321" "$t/sub" "$t/ro"
chmod 0555 "$t/ro"

# The whole state of a tree, one record per entry, in name order: type, mode, mtime (ns),
# owner, size and content digest (files), target (symlinks). stat -c %y shows the same ns.
snapshot() {
  python3 - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
out = []
groups = {}
for dirpath, dirs, files in os.walk(root):
    for n in sorted(dirs + files):
        p = os.path.join(dirpath, n)
        st = os.lstat(p)
        rec = [repr(os.path.relpath(p, root)), stat.S_IFMT(st.st_mode), oct(stat.S_IMODE(st.st_mode)),
               st.st_mtime_ns, st.st_uid, st.st_gid]
        if stat.S_ISREG(st.st_mode):
            rec += [st.st_size, hashlib.sha256(open(p, 'rb').read()).hexdigest()]
        elif stat.S_ISLNK(st.st_mode):
            rec += [repr(os.readlink(p))]
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            groups.setdefault(st.st_ino, []).append(os.path.relpath(p, root))
        out.append(' '.join(map(str, rec)))
st = os.lstat(root)
print(oct(stat.S_IMODE(st.st_mode)), st.st_mtime_ns)
print('\n'.join(sorted(out)))
print('hard-link groups:', sorted(sorted(g) for g in groups.values()))
PY
}
same_tree() {  # REF DIR: identical snapshots (the difference is printed when not)
  snapshot "$1" > "$work/a.snap"; snapshot "$2" > "$work/b.snap"
  diff "$work/a.snap" "$work/b.snap" > "$work/snap.diff" && return 0
  head -n 20 "$work/snap.diff" | sed 's/^/    /'; return 1
}

rsync -aH "$t" "$work/ref/" || { echo "meta_suite: rsync -aH failed"; exit 1; }
check "the reference (rsync -a) keeps what the suite looks at" test "$(wc -l < <(snapshot "$work/ref/tree"))" -gt 60

# ---- push and pull with -a
mkdir "$exp/push"
rcp -aH "$t" "$addr:data/push/"; rc=$?
check "push -aH exits 0" test $rc = 0
check "push -aH: the tree is what rsync -aH makes" same_tree "$work/ref/tree" "$exp/push/tree"
rcp -aH "$addr:data/push/tree" "$work/pull/"; rc=$?
check "pull -aH exits 0" test $rc = 0
check "pull -aH: the tree is what rsync -aH makes" same_tree "$work/ref/tree" "$work/pull/tree"
check "a hard-link group arrives as one inode" \
  test "$(stat -c %i "$work/pull/tree/hard1")" = "$(stat -c %i "$work/pull/tree/sub/hard2")" -a "$(stat -c %h "$work/pull/tree/hard3")" = 3
check "mtimes to the nanosecond (stat -c %y)" \
  test "$(stat -c %y "$work/pull/tree/sub/file")" = "$(stat -c %y "$t/sub/file")"
check "symlink targets verbatim (absolute, dangling)" \
  test "$(readlink "$exp/push/tree/abs_link"):$(readlink "$work/pull/tree/dangling")" = "/etc/hostname:does/not/exist"
check "a symlink to a directory stays a symlink" test -L "$work/pull/tree/dir_link"
check "no temp file left" test -z "$(find "$exp" "$work/pull" -name '.*.rcp-*')"

# ---- a second push over the copy: same result, symlinks replaced, not written through
rcp -aH "$t" "$addr:data/push/"; rc=$?
check "push -aH again over the copy exits 0" test $rc = 0
check "push -aH again: still what rsync -aH makes" same_tree "$work/ref/tree" "$exp/push/tree"
mkdir "$exp/nohard"
rcp -a "$t" "$addr:data/nohard/"; rc=$?
check "without -H hard links arrive as separate files" \
  test $rc = 0 -a "$(stat -c %h "$exp/nohard/tree/hard1")" = 1 -a -f "$exp/nohard/tree/hard3"

# ---- without -l: symlinks are skipped with a warning, not an error, exit 0
mkdir "$exp/plain"
rcp -r "$t" "$addr:data/plain/"; rc=$?
check "push -r without -l exits 0" test $rc = 0
check "  ... warns about the symlinks (not 'error:')" \
  bash -c "grep -q 'warning: skipping.*rel_link' '$work/err' && ! grep -q 'error:' '$work/err'"
check "  ... and sends no symlink" test -z "$(find "$exp/plain" -type l)"
mkdir "$work/pull-plain"
rcp -r "$addr:data/push/tree" "$work/pull-plain/"; rc=$?
check "pull -r of a tree with symlinks exits 0 with a warning" \
  bash -c "[ $rc = 0 ] && grep -q 'warning: skipping' '$work/err' && ! grep -q 'error:' '$work/err'"

# ---- -L follows symlinks on the source
mkdir "$exp/follow"
rcp -rL "$t/sub" "$t/rel_link" "$t/dir_link" "$addr:data/follow/"; rc=$?
check "push -L exits 0" test $rc = 0
check "  ... a symlink to a file arrives as the file" cmp -s "$t/sub/file" "$exp/follow/rel_link"
check "  ... a symlink to a directory arrives as the directory" test -d "$exp/follow/dir_link" -a ! -L "$exp/follow/dir_link"

# ---- -a over a pull: a symlink in the export is data, never followed by the daemon
ln -s / "$exp/push/tree/escape"
mkdir "$work/pull-escape"
rcp -a "$addr:data/push/tree/escape/etc/hostname" "$work/pull-escape/"; rc=$?
check "a path through a symlink in the export is refused" \
  bash -c "[ $rc != 0 ] && [ -z \"\$(ls -A '$work/pull-escape')\" ]"

# ---- a missing destination (--mkpath semantics) and rsync's trailing-slash rules
rcp -r "$t/sub" "$addr:data/new/deep/"; rc=$?
check "push -r into a missing directory makes it with its parents" test $rc = 0 -a -f "$exp/new/deep/sub/file"
rcp -r "$t/sub/" "$addr:data/contents"; rc=$?
check "push -r 'dir/' sends dir's contents" test $rc = 0 -a -f "$exp/contents/file" -a ! -e "$exp/contents/sub"
rcp "$t/sub/file" "$addr:data/onefile/"; rc=$?
check "push of one file to a missing 'dir/' makes the directory" test $rc = 0 -a -f "$exp/onefile/file"
rcp "$t/sub/file" "$addr:data/no/parent"; rc=$?
check "push of one file to a missing parent is refused (not a directory destination)" test $rc != 0 -a ! -e "$exp/no"
rcp -r "$addr:data/push/tree/sub" "$work/pm/a/b"; rc=$?
check "pull -r into a missing directory makes it with its parents" test $rc = 0 -a -f "$work/pm/a/b/sub/file"
rcp -r "$addr:data/push/tree/sub/" "$work/pc"; rc=$?
check "pull -r of 'dir/' brings dir's contents" test $rc = 0 -a -f "$work/pc/file" -a ! -e "$work/pc/sub"
rcp "$addr:data/push/tree/sub/file" "$work/pf/"; rc=$?
check "pull of one file to a missing 'dir/' makes the directory" test $rc = 0 -a -f "$work/pf/file"

# ---- -aHS: a sparse tree (hole at the start and the end, data at the very end, all hole, a hard
# link to a sparse file) as rsync -aHS makes it, allocation included (st_blocks within 1 MiB)
sp=$src/sparse; mkdir -p "$sp"
truncate -s 64M "$sp/holey"
head -c 1048576 /dev/urandom | dd of="$sp/holey" bs=1M seek=20 conv=notrunc status=none
truncate -s $((8 * 1048576 + 5)) "$sp/end"; printf 'tail' | dd of="$sp/end" bs=1 seek=$((8 * 1048576 + 1)) conv=notrunc status=none
truncate -s 3M "$sp/allhole"; ln "$sp/holey" "$sp/holey-link"
find "$sp" -exec touch -h -d "2001-02-03 04:05:06.123456789" {} +
rsync -aHS "$sp" "$work/refS/" || { echo "meta_suite: rsync -aHS failed"; exit 1; }
rcp -aHS "$sp" "$addr:data/pushS/"; rc=$?
if [ $rc = 0 ] && same_tree "$work/refS/sparse" "$exp/pushS/sparse"; then ok "push -aHS: the tree is what rsync -aHS makes"; else bad "push -aHS (exit $rc): the tree is what rsync -aHS makes"; fi
rcp -aHS "$addr:data/pushS/sparse" "$work/pullS/"; rc=$?
if [ $rc = 0 ] && same_tree "$work/refS/sparse" "$work/pullS/sparse"; then ok "pull -aHS: the tree is what rsync -aHS makes"; else bad "pull -aHS (exit $rc): the tree is what rsync -aHS makes"; fi
for f in holey end allhole; do
  r=$(stat -c %b "$work/refS/sparse/$f") a=$(stat -c %b "$exp/pushS/sparse/$f") b=$(stat -c %b "$work/pullS/sparse/$f")
  check "  ... $f allocated as rsync -S allocates it ($r blocks; push $a, pull $b)" \
    test $((a - r)) -le 2048 -a $((r - a)) -le 2048 -a $((b - r)) -le 2048 -a $((r - b)) -le 2048
done

kill -TERM "$dpid"; wait "$dpid" 2>/dev/null; dpid=
echo "meta_suite[$transport]: $pass passed, $fail failed"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
