#!/bin/bash
# Sparse files and holes (issue 13, and -S of issue 10), with real rcpd and rcp processes over a
# real connection (TCP on loopback, or verbs over soft-RoCE in the test guest): a source's holes
# (SEEK_DATA/SEEK_HOLE) are never read nor sent, so --json bytes_transferred counts data only;
# with -S the destination leaves them unallocated, without it allocates them (as rsync); every
# copy is byte-identical (cmp). As root with losetup, a pull onto a loop device writes the holes
# as zeros, or with --discard deallocates them (the loop device's image gets holes).
#
# usage: sparse_suite.sh --bin DIR --transport tcp|rdma [--addr ADDR] [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args sparse_suite "$@"
suite_bins sparse_suite
if [ "$transport" = rdma ] && ! ls /sys/class/infiniband/ 2>/dev/null | grep -q .; then
  echo "sparse_suite: SKIPPING: no RDMA device on this host (run it in tests/vm/rxe-run)" >&2
  exit 77
fi

# The work directory holds about 150 MiB: the 1 GiB files are sparse (3 MiB each), the file
# copied without -S and the loop device's image are 64 MiB allocated each.
[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-sparse.XXXXXX)
mkdir -p "$work"
src=$work/src exp=$work/export out=$work/out
rm -rf "$src" "$exp" "$out"; mkdir -p "$src" "$exp" "$out"
# Ports: this suite's own offset (+11/+12) from the per-process base the other suites use.
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$((base + 11)) tport=$((base + 12))
jnum() { grep -o "\"$1\":[0-9]*" "$2" | head -n 1 | cut -d: -f2; }
jcheck() {  # NAME FILE KEY OP VALUE
  local v; v=$(jnum "$3" "$2")
  if [ -n "$v" ] && [ "$v" "$4" "$5" ]; then ok "$1 ($3 = $v)"; else bad "$1" "$3 = '${v}', want $4 $5: $(cat "$2")"; fi
}
alloc() { echo $(( $(stat -c %b "$1") * $(stat -c %B "$1") )); }  # bytes allocated
acheck() {  # NAME FILE OP BYTES: the file's allocation compared with test(1)
  local a; a=$(alloc "$2")
  if [ "$a" "$3" "$4" ]; then ok "$1 (allocated $a)"; else bad "$1" "allocated $a, want $3 $4"; fi
}

loops=()
dpid=
cleanup() {
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null; done
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "sparse_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
dlog=$work/rcpd.log
(exec "$RCPD" --listen "$addr:$tport" -P "$rport" --transport "$transport" --export data="$exp" -v >> "$dlog" 2>&1) &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && break; sleep 0.05; done
grep -q "rcpd: ready" "$dlog" || { echo "rcpd did not start:"; cat "$dlog"; exit 1; }
rcp() { (exec timeout 300 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
MiB=1048576

# mkholey FILE SIZE [OFFSET_MIB ...]: FILE of SIZE bytes, 1 MiB of random data at each offset
mkholey() {
  local f=$1 size=$2; shift 2
  rm -f "$f"; truncate -s "$size" "$f"
  for o in "$@"; do head -c $MiB /dev/urandom | dd of="$f" bs=$MiB seek="$o" conv=notrunc status=none; done
}

# --- 1 GiB with three 1 MiB extents (one at the very end): ~3 MiB moves, ~3 MiB arrives
mkholey "$src/big" $((1024 * MiB)) 0 511 1023
acheck "the 1 GiB source has 3 MiB of data" "$src/big" -le $((4 * MiB))
rcp -S --json "$src/big" "$addr:data/big" > "$work/j1"; rc=$?
check "push -S of the 1 GiB sparse file (exit $rc)" test $rc = 0
jcheck "  ... moves only its data" "$work/j1" bytes_transferred -le $((4 * MiB))
jcheck "  ... bytes_total is the whole size" "$work/j1" bytes_total -eq $((1024 * MiB))
check "  ... byte-identical" cmp -s "$src/big" "$exp/big"
acheck "  ... arrives with ~3 MiB allocated" "$exp/big" -le $((4 * MiB))
rcp -S --json "$addr:data/big" "$out/big" > "$work/j2"; rc=$?
check "pull -S of the 1 GiB sparse file (exit $rc)" test $rc = 0
jcheck "  ... moves only its data" "$work/j2" bytes_transferred -le $((4 * MiB))
check "  ... byte-identical" cmp -s "$src/big" "$out/big"
acheck "  ... arrives with ~3 MiB allocated" "$out/big" -le $((4 * MiB))

# --- without -S the holes are still not sent, but the destination allocates them (rsync's default)
mkholey "$src/alloc" $((64 * MiB)) 7
rcp --json "$src/alloc" "$addr:data/alloc" > "$work/j3"; rc=$?
check "push without -S (exit $rc): byte-identical" bash -c "[ $rc = 0 ] && cmp -s '$src/alloc' '$exp/alloc'"
jcheck "  ... moves only its data" "$work/j3" bytes_transferred -le $((2 * MiB))
acheck "  ... arrives fully allocated" "$exp/alloc" -ge $((63 * MiB))

# --- edge layouts, sizes not a multiple of the chunk (1 MiB), as a tree (-r -S) both ways
t=$src/tree; mkdir -p "$t"
mkholey "$t/data-at-end" $((5 * MiB + 123)) 4                   # hole, data, and data in the
head -c 77 /dev/urandom | dd of="$t/data-at-end" bs=1 seek=$((5 * MiB + 46)) conv=notrunc status=none  # short last chunk
mkholey "$t/hole-at-end" $((9 * MiB + 4097)) 0 2                # data, hole, data, hole to the end
truncate -s $((3 * MiB + 1)) "$t/all-hole"                        # nothing but a hole
head -c $((3 * MiB + 999)) /dev/urandom > "$t/no-holes"           # no hole at all
truncate -s $((MiB / 2)) "$t/small-hole"                          # a hole shorter than a chunk
: > "$t/empty"
# The chunks with data: data-at-end's last two (1 MiB + 123), hole-at-end's two, no-holes' four.
data_bytes=$((MiB + 123 + 2 * MiB + 3 * MiB + 999))
rcp -r -S --json "$t" "$addr:data/" > "$work/j4"; rc=$?
check "push -r -S of the edge tree (exit $rc): identical" bash -c "[ $rc = 0 ] && diff -r '$t' '$exp/tree'"
jcheck "  ... moves at most its data chunks" "$work/j4" bytes_transferred -eq $data_bytes
acheck "  ... all-hole arrives unallocated" "$exp/tree/all-hole" -eq 0
acheck "  ... hole-at-end arrives with its 2 MiB" "$exp/tree/hole-at-end" -le $((3 * MiB))
check "  ... sizes kept" test "$(stat -c %s "$exp/tree/hole-at-end")" = $((9 * MiB + 4097))
rcp -r -S --json "$addr:data/tree" "$out/" > "$work/j5"; rc=$?
check "pull -r -S of the edge tree (exit $rc): identical" bash -c "[ $rc = 0 ] && diff -r '$t' '$out/tree'"
jcheck "  ... moves at most its data chunks" "$work/j5" bytes_transferred -eq $data_bytes
acheck "  ... all-hole arrives unallocated" "$out/tree/all-hole" -eq 0
acheck "  ... data-at-end arrives with ~1 MiB" "$out/tree/data-at-end" -le $((2 * MiB))
# a changed file whose new version has a hole where the old one had data: the hole reads as zeros
mkholey "$src/swap" $((8 * MiB)) 0 1 2 3 4 5 6 7
rcp "$src/swap" "$addr:data/swap" && mkholey "$src/swap" $((8 * MiB)) 6 && touch -d '2001-01-01' "$src/swap"
rcp -S --json "$src/swap" "$addr:data/swap" > "$work/j6"; rc=$?
check "data replaced by a hole in an existing destination file (exit $rc): byte-identical" \
  bash -c "[ $rc = 0 ] && cmp -s '$src/swap' '$exp/swap'"

# --- -c on an unchanged sparse file: its holes count as equal, so the file is kept as it is
ino=$(stat -c %i "$exp/big")
rcp -S -c --json "$src/big" "$addr:data/big" > "$work/j9"; rc=$?
check "-S -c push of the unchanged 1 GiB sparse file (exit $rc)" test $rc = 0
jcheck "  ... moves nothing" "$work/j9" bytes_transferred -eq 0
jcheck "  ... transfers no file" "$work/j9" files_transferred -eq 0
check "  ... keeps the destination file (same inode, not rebuilt)" test "$(stat -c %i "$exp/big")" = "$ino"

# --- -S on zeros the source holds as data (written out, so SEEK_DATA finds no hole): they
# cross the wire, and the receiver leaves whole 4 KiB blocks of zeros as holes (rsync -S)
{ head -c $MiB /dev/urandom; head -c $((6 * MiB)) /dev/zero; head -c 4096 /dev/urandom
  head -c $((2 * MiB + 4096)) /dev/zero; } > "$src/zeros"
zsize=$((9 * MiB + 8192))
acheck "the zero-filled source is allocated" "$src/zeros" -ge $((9 * MiB))
rcp -S --json "$src/zeros" "$addr:data/zeros" > "$work/j10"; rc=$?
check "push -S of a file of written zeros (exit $rc): byte-identical" bash -c "[ $rc = 0 ] && cmp -s '$src/zeros' '$exp/zeros'"
jcheck "  ... all of it crossed (no hole at the source)" "$work/j10" bytes_transferred -eq $zsize
acheck "  ... its zero blocks arrive unallocated" "$exp/zeros" -le $((2 * MiB))
check "  ... size kept (a zero tail)" test "$(stat -c %s "$exp/zeros")" = $zsize
rcp -S "$addr:data/zeros" "$out/zeros"; rc=$?
check "pull -S of it (exit $rc): byte-identical" bash -c "[ $rc = 0 ] && cmp -s '$src/zeros' '$out/zeros'"
acheck "  ... its zero blocks arrive unallocated" "$out/zeros" -le $((2 * MiB))
rcp "$addr:data/zeros" "$out/zeros-alloc"; rc=$?
acheck "  ... without -S (exit $rc) they are written" "$out/zeros-alloc" -ge $((9 * MiB))

# --- onto a block device (--write-devices): holes written as zeros, or discarded (--discard)
if [ "$(id -u)" = 0 ] && command -v losetup > /dev/null && { [ -e /dev/loop-control ] || modprobe loop 2>/dev/null; }; then
  mkholey "$exp/disk.img" $((64 * MiB)) 0 40
  img=$work/loop.img
  head -c $((64 * MiB)) /dev/urandom > "$img"   # old contents everywhere: holes must overwrite them
  if loop=$(losetup -f --show "$img"); then
    loops+=("$loop")
    rcp --write-devices --json "$addr:data/disk.img" "$loop" > "$work/j7"; rc=$?
    check "pull of a sparse image onto a loop device (exit $rc): identical, holes are zeros" \
      bash -c "[ $rc = 0 ] && cmp -s '$exp/disk.img' '$loop'"
    jcheck "  ... moves only its data" "$work/j7" bytes_transferred -le $((3 * MiB))
    head -c $((64 * MiB)) /dev/urandom | dd of="$loop" bs=$MiB status=none conv=fsync
    rcp --write-devices --discard --json "$addr:data/disk.img" "$loop" > "$work/j8"; rc=$?
    sync
    check "  ... with --discard (exit $rc): identical (a loop device reads discarded ranges as zeros)" \
      bash -c "[ $rc = 0 ] && cmp -s '$exp/disk.img' '$loop'"
    acheck "  ... --discard deallocated the holes in the loop device's image" "$img" -le $((8 * MiB))
  else
    echo "sparse_suite: no free loop device: device checks skipped" >&2
  fi
else
  echo "sparse_suite: not root or no losetup: the --write-devices/--discard checks are skipped (block_suite's host runs them)" >&2
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
