#!/bin/bash
# -X/--xattrs and -A/--acls (issue 10): a tree with xattr values of 0, 1, 3071, 3072, 3073,
# 4096 and 65536 bytes (one XATTR piece is at most 3072 bytes), a file with 100 names, a
# directory with xattrs and a default ACL, files and a directory with access ACLs — pushed
# and pulled with `rcp -aX` / `rcp -aA` through real rcpd and rcp processes (TCP on loopback,
# or verbs in the soft-RoCE guest) is what `rsync -aX` / `rsync -aA` make of it locally
# (getfattr and getfacl output compared); an xattr changed on an unchanged file is updated
# (-i shows 'x'), an ACL change shows 'a'; -a alone carries none; a push never sets trusted.*.
#
# usage: xattr_suite.sh --bin DIR --transport tcp|rdma [--addr ADDR] [--work DIR]
# Prints PASS/FAIL (and SKIP) lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args xattr_suite "$@"
suite_bins xattr_suite
for c in rsync getfattr setfattr getfacl setfacl base64; do
  command -v $c > /dev/null || { echo "xattr_suite: $c is needed (packages rsync attr acl: scripts/install-deps.sh)" >&2; exit 2; }
done

# tmpfs keeps a value of 64 KiB (kernel 6.x: user.* on tmpfs); ext4 keeps an inode's
# xattrs in one block, so there the 64 KiB value is refused and skipped (a SKIP line).
if [ -z "$work" ]; then
  work=$(mktemp -d /dev/shm/rcp-xattr.XXXXXX 2>/dev/null) || work=$(mktemp -d /tmp/rcp-xattr.XXXXXX)
fi
mkdir -p "$work"
exp=$work/export src=$work/src
rm -rf "${work:?}"/*  # a kept run's leftovers
mkdir -p "$exp" "$src" "$work/ref"
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$((base + 13)) tport=$((base + 14))
dpid=
cleanup() {
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "xattr_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
(umask 077; exec "$RCPD" --listen "$addr:$tport" -P "$rport" --transport "$transport" --export data="$exp" -v \
   >> "$work/rcpd.log" 2>&1) &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/rcpd.log" 2>/dev/null && break; sleep 0.05; done
rcp() { (umask 022; exec timeout 120 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }

probe=$work/probe; : > "$probe"
setfattr -n user.probe -v 1 "$probe" 2>/dev/null || { echo "xattr_suite: $work keeps no user.* xattrs" >&2; exit 2; }
setfacl -m u:nobody:r "$probe" 2>/dev/null || { echo "xattr_suite: $work keeps no POSIX ACLs" >&2; exit 2; }

# ---- the tree
t=$src/xt
mkdir -p "$t/dir/sub" "$t/acldir"
value() { head -c "$1" /dev/urandom | base64 -w0 | head -c "$1"; }  # printable, exactly $1 bytes
for s in 0 1 3071 3072 3073 4096 65536; do
  echo "size $s" > "$t/v$s"
  if [ "$s" = 0 ]; then setfattr -n user.v "$t/v$s"
  elif ! setfattr -n user.v -v "0s$(value "$s" | base64 -w0)" "$t/v$s" 2>/dev/null; then
    echo "SKIP a $s-byte xattr value: the file system under $work refuses it"
  fi
done
echo many > "$t/many"
for i in $(seq -w 1 100); do setfattr -n "user.n$i" -v "value $i" "$t/many"; done
setfattr -n user.dir -v "a directory's" "$t/dir"
setfattr -n user.sub -v "$(value 5000)" "$t/dir/sub"
echo f > "$t/dir/sub/f"; setfattr -n user.in -v deep "$t/dir/sub/f"
echo plain > "$t/plain"
ln -s plain "$t/link"
echo acl > "$t/acl_file"; setfacl -m u:nobody:rw,g:nogroup:r "$t/acl_file"
setfacl -m u:nobody:rx "$t/acldir"
setfacl -d -m u:nobody:rwx,g::r-x "$t/acldir"
echo inherit > "$t/acldir/f"
mkdir "$t/acldir/d"
root=0; [ "$(id -u)" = 0 ] && root=1
[ $root = 1 ] && setfattr -n trusted.t -v secret "$t/plain"
find "$t" -exec touch -h -d "2001-02-03 04:05:06.123456789" {} +

# One record per entry, in name order: getfattr's dump of the names matching $2 (hex values,
# never following a symlink), or getfacl's (-A); $1 is the tree.
xdump() { (cd "$1" && find . | LC_ALL=C sort | while read -r f; do
            getfattr -h -d -e hex -m "$2" --absolute-names "$f" 2>/dev/null; done); }
adump() { (cd "$1" && find . ! -type l | LC_ALL=C sort | while read -r f; do getfacl -p -n "$f" 2>/dev/null; done); }
same() {  # WHAT REF DIR
  "$1" "$2" "${4:-^user\\.}" > "$work/a.dump"; "$1" "$3" "${4:-^user\\.}" > "$work/b.dump"
  [ -s "$work/a.dump" ] || { echo "    (empty dump of $2)"; return 1; }
  diff "$work/a.dump" "$work/b.dump" > "$work/dump.diff" && return 0
  head -n 12 "$work/dump.diff" | sed 's/^/    /'; return 1
}
hasx() { getfattr -h --only-values -n "$2" "$1" > /dev/null 2>&1; }

rsync -aX "$t" "$work/ref/X/" || { echo "xattr_suite: rsync -aX failed"; exit 1; }
rsync -aA "$t" "$work/ref/A/" || { echo "xattr_suite: rsync -aA failed"; exit 1; }
check "the reference (rsync -aX) has every size and name" \
  test "$(xdump "$work/ref/X/xt" '^user\.' | grep -c '^user\.')" -ge 108

# ---- -aX: push and pull
mkdir "$exp/X"
rcp -aX "$t" "$addr:data/X/"; rc=$?
check "push -aX exits 0" test $rc = 0
check "push -aX: the user.* xattrs are what rsync -aX makes (getfattr)" same xdump "$work/ref/X/xt" "$exp/X/xt"
rcp -aX "$addr:data/X/xt" "$work/pullX/"; rc=$?
check "pull -aX exits 0" test $rc = 0
check "pull -aX: the user.* xattrs are what rsync -aX makes (getfattr)" same xdump "$work/ref/X/xt" "$work/pullX/xt"
check "  ... the 100 names of one file arrive" test "$(getfattr --absolute-names -d -m '^user\.' "$work/pullX/xt/many" | grep -c '^user\.n')" = 100
check "  ... a 0-byte value arrives as one" hasx "$work/pullX/xt/v0" user.v
if [ $root = 1 ]; then
  check "a push never sets trusted.* (rcpd: a client may not)" bash -c "! getfattr -h -n trusted.t '$exp/X/xt/plain' 2>/dev/null | grep -q trusted"
  setfattr -n trusted.t -v secret "$exp/X/xt/plain"
  rcp -aX "$addr:data/X/xt/plain" "$work/pullT/"; rc=$?
  check "a pull as root brings trusted.* (rsync -X as root)" \
    bash -c "[ $rc = 0 ] && getfattr -h -n trusted.t '$work/pullT/plain' 2>/dev/null | grep -q secret"
else
  echo "SKIP trusted.* checks: not root"
fi

# ---- -a alone carries none (rsync: -a does not imply -X or -A)
mkdir "$exp/plain"
rcp -a "$t" "$addr:data/plain/"; rc=$?
check "push -a (no -X/-A) exits 0 and carries no xattr or ACL" \
  bash -c "[ $rc = 0 ] && [ -z \"\$(cd '$exp/plain' && getfattr -R -h -d -m - . 2>/dev/null)\" ]"

# ---- -aA: push and pull (ACLs: access and default, as getfacl shows them)
mkdir "$exp/A"
rcp -aA "$t" "$addr:data/A/"; rc=$?
check "push -aA exits 0" test $rc = 0
check "push -aA: the ACLs are what rsync -aA makes (getfacl)" same adump "$work/ref/A/xt" "$exp/A/xt"
rcp -aA "$addr:data/A/xt" "$work/pullA/"; rc=$?
check "pull -aA exits 0" test $rc = 0
check "pull -aA: the ACLs are what rsync -aA makes (getfacl)" same adump "$work/ref/A/xt" "$work/pullA/xt"
check "  ... a directory's default ACL arrives" bash -c "getfacl -p '$work/pullA/xt/acldir' | grep -q '^default:user:nobody:rwx'"
check "  ... and -A alone carries no user.* xattr" bash -c "! getfattr -h -d -m '^user\.' '$work/pullA/xt/v1' 2>/dev/null | grep -q user"

# ---- an unchanged file (quick check) whose xattrs changed: updated, -i says 'x' / 'a'
setfattr -n user.v -v changed "$t/v1"
setfattr -x user.n050 "$t/many"
rcp -aXi "$t" "$addr:data/X/" > "$work/items"; rc=$?
check "push -aXi after an xattr change exits 0" test $rc = 0
check "  ... -i lists the files whose xattrs changed with 'x' (.f........x)" \
  bash -c "grep -qx '.f........x xt/v1' '$work/items' && grep -qx '.f........x xt/many' '$work/items'"
check "  ... and lists nothing else" test "$(grep -vc '^\.d' "$work/items")" = 2
check "  ... the unchanged files' xattrs are updated" same xdump "$t" "$exp/X/xt"
# -n lists the same, changes nothing; --ignore-existing leaves a kept file's xattrs alone (rsync)
setfattr -n user.v -v again "$t/v1"
rcp -aXin "$t" "$addr:data/X/" > "$work/items"; rc=$?
check "push -aXin: lists the xattr change, sets nothing" \
  bash -c "[ $rc = 0 ] && grep -qx '.f........x xt/v1' '$work/items' && [ \"\$(getfattr --absolute-names --only-values -n user.v '$exp/X/xt/v1')\" = changed ]"
rcp -aXi --ignore-existing "$t" "$addr:data/X/" > "$work/items"; rc=$?
check "push -aXi --ignore-existing: the kept file's xattrs stay, nothing listed" \
  bash -c "[ $rc = 0 ] && ! grep -q 'xt/v1' '$work/items' && [ \"\$(getfattr --absolute-names --only-values -n user.v '$exp/X/xt/v1')\" = changed ]"
setfattr -n user.v -v changed "$t/v1"
setfacl -m u:nobody:r "$t/acl_file"
touch -h -d "2001-02-03 04:05:06.123456789" "$t/acl_file"
rcp -aAi "$t" "$addr:data/A/" > "$work/items"; rc=$?
check "push -aAi after an ACL change: exit 0, 'a' listed" \
  bash -c "[ $rc = 0 ] && grep -Eq '^\.f[.a-z]{7}a\. xt/acl_file$' '$work/items'"
check "  ... and the ACL updated" same adump "$t" "$exp/A/xt"
rcp -aXi "$addr:data/X/xt" "$work/pullX/" > "$work/items"; rc=$?
check "pull -aXi after the change updates the same two files (x)" \
  bash -c "[ $rc = 0 ] && grep -qx '.f........x xt/v1' '$work/items' && grep -qx '.f........x xt/many' '$work/items'"
check "  ... and the pulled xattrs are the source's" same xdump "$t" "$work/pullX/xt"

kill -TERM "$dpid"; wait "$dpid" 2>/dev/null; dpid=
echo "xattr_suite[$transport]: $pass passed, $fail failed"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
