#!/bin/bash
# Block devices and direct I/O (issue 13), with real rcpd and rcp processes over a real
# connection (TCP on loopback, or verbs over soft-RoCE in the test guest) and real loop devices:
# a device, FIFO or socket at a destination is never replaced; a 64 MiB loop device goes to a
# remote file and back onto a second loop device byte-identical; a smaller, mounted or unverified
# device destination is refused with nothing written; a daemon exports a device only as
# configured; --direct copies of awkward sizes on ext4-on-loop arrive byte-identical.
#
# usage: block_suite.sh --bin DIR --transport tcp|rdma [--addr ADDR] [--work DIR]
# Needs root, losetup and mkfs.ext4: without them it SKIPS (exit 77) and says so loudly.
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args block_suite "$@"
suite_bins block_suite
skip() {
  echo "block_suite: ######## SKIPPING THE WHOLE BLOCK-DEVICE SUITE: $* ########" >&2
  exit 77
}
[ "$(id -u)" = 0 ] || skip "not root (loop devices need root)"
for t in losetup mkfs.ext4 mkfifo mknod mount; do command -v $t > /dev/null || skip "$t not installed"; done
[ -e /dev/loop-control ] || modprobe loop 2>/dev/null
[ -e /dev/loop-control ] || skip "no loop device support (modprobe loop failed)"

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-block.XXXXXX)
mkdir -p "$work"
echo "block_suite[$transport]: work directory $work"
exp=$work/export out=$work/out
rm -rf "$exp" "$out"; mkdir -p "$exp" "$out"
# Below the kernel's ephemeral ports (32768-60999): a listener there can collide with a
# client socket's local port (CI saw "bind tcp 127.0.0.1:34938: Address already in use").
base=$(( 20000 + ($$ % 790) * 16 ))
rport=$base tport=$((base + 1))
err_has() { grep -qi -- "$1" "$work/err"; }

loops=()
dpid=
cleanup() {
  if [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; then kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi
  mountpoint -q "$work/ramfs" 2>/dev/null && umount "$work/ramfs"
  mountpoint -q "$work/mnt" 2>/dev/null && { umount "$work/mnt" || echo "block_suite: could not unmount $work/mnt" >&2; }
  for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null; done
  if [ "$fail" = 0 ] && ! mountpoint -q "$work/mnt" 2>/dev/null; then rm -rf "$work"; else echo "block_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT
# new_loop FILE SIZE_MIB: a loop device over a new image of SIZE_MIB; its path in $loop
new_loop() {
  truncate -s "${2}M" "$1" || exit 1
  loop=$(losetup -f --show "$1") || skip "losetup -f failed (no free loop device?)"
  loops+=("$loop")
}
conf=$work/rcpd.conf
start_daemon() {  # starts rcpd on $conf
  nstart=$((${nstart:-0} + 1)); dlog=$work/rcpd.$nstart.log
  (exec "$RCPD" --config "$conf" --listen "$addr" -P "$rport" --tcp-port "$tport" --transport "$transport" -v \
      >> "$dlog" 2>&1) &
  dpid=$!
  for _ in $(seq 100); do grep -q "rcpd: ready" "$dlog" 2>/dev/null && return 0; sleep 0.05; done
  echo "rcpd did not start:"; cat "$dlog"; exit 1
}
stop_daemon() { kill -TERM "$dpid" 2>/dev/null; wait "$dpid"; dpid=; }
rcp() { (exec timeout 120 "$RCP" --transport "$transport" -P "$rport" --tcp-port "$tport" "$@" 2> "$work/err"); }
same_prefix() {  # FILE DEVICE: the device begins with exactly the file
  cmp -s -n "$(stat -c %s "$1")" "$1" "$2"
}

# Devices: A (64 MiB, random data) is the source; B (64 MiB) the destination; S (32 MiB) too
# small; M (64 MiB) holds a mounted ext4 file system (also the --direct tests' file system).
new_loop "$work/a.img" 64; A=$loop
dd if=/dev/urandom of="$A" bs=1M count=64 status=none conv=fsync
new_loop "$work/b.img" 64; B=$loop
new_loop "$work/s.img" 32; S=$loop
dd if=/dev/zero bs=1M count=32 status=none | tr '\0' 'S' > "$S"
sum_s=$(sha256sum < "$S")
new_loop "$work/m.img" 64; M=$loop
mkfs.ext4 -q -F "$M" > /dev/null 2>&1 || skip "mkfs.ext4 on $M failed"
mkdir -p "$work/mnt" && mount "$M" "$work/mnt" || skip "cannot mount ext4 on $M"
echo "block_suite[$transport]: loop devices A=$A B=$B S=$S M=$M (ext4 on $work/mnt)"

cat > "$conf" <<TOML
[modules.data]
path = "$exp"
read_only = false

[modules.diska]
device = "$A"

[modules.diskb]
device = "$B"
read_only = false

[modules.disks]
device = "$S"
read_only = false

[modules.ext4]
path = "$work/mnt"
read_only = false
direct = true
TOML
start_daemon

# --- 1. nothing but a regular file (or symlink) is ever replaced ---------------------------------
head -c 100000 /dev/urandom > "$exp/f.bin"
dd if=/dev/zero bs=1M count=64 status=none | tr '\0' 'B' > "$B"
sum_b=$(sha256sum < "$B")
rcp "$addr:data/f.bin" "$B"; rc=$?
check "pull onto a block device without --write-devices: refused (exit $rc), node and data kept, path named" \
  bash -c "[ $rc -ne 0 ] && [ -b '$B' ] && [ \"\$(sha256sum < '$B')\" = '$sum_b' ] && grep -q '$B' '$work/err' \
           && grep -qi 'block device' '$work/err'"
mkfifo "$out/fifo"
rcp "$addr:data/f.bin" "$out/fifo"; rc=$?
check "pull onto a FIFO: refused (exit $rc), the FIFO still there, path named" \
  bash -c "[ $rc -ne 0 ] && [ -p '$out/fifo' ] && grep -q '$out/fifo' '$work/err' && grep -qi fifo '$work/err'"
mknod "$out/null" c 1 3
rcp "$addr:data/f.bin" "$out/null"; rc=$?
check "pull onto a character device: refused (exit $rc), the node kept" \
  bash -c "[ $rc -ne 0 ] && [ -c '$out/null' ] && grep -qi 'character device' '$work/err'"
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$out/sock"
rcp "$addr:data/f.bin" "$out/sock"; rc=$?
check "pull onto a socket: refused (exit $rc), the socket kept" bash -c "[ $rc -ne 0 ] && [ -S '$out/sock' ]"
ln -s "$B" "$out/disk-link"
rcp "$addr:data/f.bin" "$out/disk-link"; rc=$?
check "pull onto a symlink to a block device: refused (exit $rc), device untouched" \
  bash -c "[ $rc -ne 0 ] && [ -L '$out/disk-link' ] && [ \"\$(sha256sum < '$B')\" = '$sum_b' ]"
mkdir -p "$out/tree/sub" && mkfifo "$out/tree/sub/f.bin"
mkdir -p "$exp/sub" && cp "$exp/f.bin" "$exp/sub/f.bin"
rcp -r "$addr:data/sub" "$out/tree/"; rc=$?
check "pull -r into a tree with a FIFO where a file lands: that file refused (exit $rc), FIFO kept" \
  bash -c "[ $rc -ne 0 ] && [ -p '$out/tree/sub/f.bin' ] && grep -q 'sub/f.bin' '$work/err'"
mkfifo "$exp/pushed"
head -c 5000 /dev/urandom > "$work/small"
rcp "$work/small" "$addr:data/pushed"; rc=$?
check "push onto a FIFO in the daemon's export: refused (exit $rc), the FIFO kept" \
  bash -c "[ $rc -ne 0 ] && [ -p '$exp/pushed' ] && [ -z \"\$(find '$exp' -name '.*.rcp-*')\" ]"

# --- 2. a device as a source and as a destination (TCP here; RDMA in the guest) -------------------
rcp "$A" "$addr:data/disk.img"; rc=$?
check "push of a block device without --copy-devices: refused (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && [ ! -e '$exp/disk.img' ] && grep -q -- '--copy-devices' '$work/err'"
rcp --copy-devices "$A" "$addr:data/disk.img"; rc=$?
check "push of a 64 MiB loop device (--copy-devices) to a remote file: byte-identical (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && [ \$(stat -c %s '$exp/disk.img') -eq 67108864 ] && cmp -s '$A' '$exp/disk.img'"
rcp --write-devices "$addr:data/disk.img" "$B"; rc=$?
check "pull of the image back onto a second loop device (--write-devices): byte-identical (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && [ -b '$B' ] && cmp -s '$A' '$B'"
check "  ... and rcp said the device is written in place (partial if interrupted)" \
  bash -c "grep -q 'in place' '$work/err' && grep -qi 'partially written' '$work/err'"
rcp --write-devices "$addr:data/disk.img" "$S"; rc=$?
check "a device smaller than the source: refused (exit $rc), nothing written" \
  bash -c "[ $rc -ne 0 ] && [ \"\$(sha256sum < '$S')\" = '$sum_s' ] && grep -qi 'smaller' '$work/err'"
rcp --write-devices "$addr:data/disk.img" "$M"; rc=$?
check "a mounted device: refused (exit $rc), naming where it is mounted" \
  bash -c "[ $rc -ne 0 ] && grep -q 'mounted on $work/mnt' '$work/err' && mountpoint -q '$work/mnt' && [ -z \"\$(ls '$work/mnt' | grep -v lost+found)\" ]"
dd if=/dev/zero of="$B" bs=1M count=64 status=none conv=fsync
rcp --write-devices --digest none "$addr:data/disk.img" "$B"; rc=$?
check "--digest none onto a device: refused (exit $rc), nothing written, naming the option" \
  bash -c "[ $rc -ne 0 ] && cmp -s -n 67108864 /dev/zero '$B' && grep -q -- '--digest none is refused' '$work/err'"
head -c 1000 /dev/urandom > "$exp/f2.bin"
rcp --write-devices "$addr:data/f.bin" "$addr:data/f2.bin" "$B"; rc=$?
check "two sources onto one device: refused, saying it takes one file (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && cmp -s -n 67108864 /dev/zero '$B' && grep -q 'is a block device: it takes exactly one file' '$work/err'"
# An interrupted copy onto a device leaves it partial; --partial finishes it: the chunks already
# there are read back and kept when their digests match, only the rest crosses the wire.
dd if="$A" of="$B" bs=1M count=40 status=none conv=fsync
rcp --write-devices --partial --json "$addr:data/disk.img" "$B" > "$work/resume.json"; rc=$?
moved=$(grep -o '"bytes_transferred": *[0-9]*' "$work/resume.json" | grep -o '[0-9]*$')
check "--partial onto a device holding the first 40 of 64 MiB: completed, byte-identical, moved ${moved:-?} bytes (<= 25 MiB) (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && cmp -s '$A' '$B' && [ -n '$moved' ] && [ '${moved:-0}' -le 26214400 ] && [ '${moved:-0}' -ge 25165824 ]"
dd if=/dev/zero of="$B" bs=1M count=8 status=none conv=fsync
rcp --write-devices --json "$addr:data/disk.img" "$B" > "$work/resume.json"; rc=$?
moved=$(grep -o '"bytes_transferred": *[0-9]*' "$work/resume.json" | grep -o '[0-9]*$')
check "  ... without --partial the whole image moves again (${moved:-?} bytes) (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && cmp -s '$A' '$B' && [ '${moved:-0}' -eq 67108864 ]"
dd if=/dev/zero of="$B" bs=1M count=64 status=none conv=fsync

# --- 3. the daemon exports devices only as configured --------------------------------------------
printf 'not a device\n' > "$work/plain.img"
printf '[modules.plain]\ndevice = "%s"\n' "$work/plain.img" > "$work/plain.conf"
"$RCPD" --config "$work/plain.conf" --transport tcp > "$work/err" 2>&1; rc=$?
check "a device module naming a regular file: rcpd refuses to start, naming it (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && grep -q \"module plain: '$work/plain.img' is not a block device\" '$work/err'"
rcp "$addr:diska" "$out/pulled.img"; rc=$?
check "pull of a device module: the whole device, byte-identical (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && cmp -s '$A' '$out/pulled.img'"
rcp "$addr:diska/x" "$out/x"; rc=$?
check "a path below a device module: refused (exit $rc), saying the module is a device" \
  bash -c "[ $rc -ne 0 ] && [ ! -e '$out/x' ] && grep -q 'exports a block device' '$work/err'"
printf 'x\n' > "$work/list"; mkdir -p "$out/ff"
rcp --files-from "$work/list" "$addr:diska" "$out/ff/"; rc=$?
check "a --files-from list against a device module: refused (exit $rc), saying the module is a device" \
  bash -c "[ $rc -ne 0 ] && [ -z \"\$(ls -A '$out/ff')\" ] && grep -q 'exports a block device' '$work/err'"
rcp "$work/small" "$addr:diskb/x"; rc=$?
check "a push to a path below a device module: refused (exit $rc), saying the module is a device" \
  bash -c "[ $rc -ne 0 ] && grep -q 'exports a block device' '$work/err'"
rcp "$work/small" "$addr:diska"; rc=$?
check "push into a device module that is read-only (the default): refused (exit $rc), device untouched" \
  bash -c "[ $rc -ne 0 ] && cmp -s '$A' '$out/pulled.img'"
rcp "$out/pulled.img" "$addr:diskb"; rc=$?
check "push into a writable device module: written in place, byte-identical (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && cmp -s '$A' '$B'"
rcp "$out/pulled.img" "$addr:disks"; rc=$?
check "push into a device module smaller than the file: refused (exit $rc), nothing written" \
  bash -c "[ $rc -ne 0 ] && [ \"\$(sha256sum < '$S')\" = '$sum_s' ]"
rcp --digest none "$work/small" "$addr:diskb"; rc=$?
check "push with --digest none into a device module: refused (exit $rc)" \
  bash -c "[ $rc -ne 0 ] && cmp -s '$A' '$B' && grep -q 'digest none is refused' '$work/err'"
rcp "$work/small" "$out/pulled.img" "$addr:diskb"; rc=$?
check "push of two files into a device module: refused by the daemon (exit $rc), device untouched" \
  bash -c "[ $rc -ne 0 ] && cmp -s '$A' '$B' && grep -q 'module diskb is a block device: it takes exactly one file' '$work/err'"
# Held open exclusively by another program (as a file system or LVM would): refused, saying so
python3 -c 'import os, sys, time; os.open(sys.argv[1], os.O_RDWR | os.O_EXCL); print("held", flush=True); time.sleep(30)' \
  "$B" > "$work/held" & hpid=$!
for _ in $(seq 100); do grep -q held "$work/held" && break; sleep 0.05; done
rcp "$work/small" "$addr:diskb"; rc=$?
kill $hpid; wait $hpid 2> /dev/null
check "push into a device module another program holds exclusively: refused (exit $rc), saying it is in use" \
  bash -c "[ $rc -ne 0 ] && cmp -s '$A' '$B' && grep -q \"'diskb' is in use (held by a file system, LVM, md or another program)\" '$work/err'"
grep -q 'in place' "$dlog"
check "the daemon logged that it writes the device in place" grep -q 'in place' "$dlog"

# --- 4. --direct on ext4 on a loop device (client --direct, module direct = true) ---------------
src=$work/mnt/src; mkdir -p "$src" "$work/mnt/in" "$work/mnt/back"
sizes="0 1 4095 4096 1048577 3149825"
for n in $sizes; do head -c "$n" /dev/urandom > "$src/f$n"; done
names=(); for n in $sizes; do names+=("$src/f$n"); done
rcp --direct -v "${names[@]}" "$addr:ext4/in/"; rc=$?
all_same() {  # DIR: every f$n in it equals the source's
  for n in $sizes; do cmp -s "$src/f$n" "$1/f$n" || { echo "    f$n differs in $1"; return 1; }; done
}
check "--direct push of sizes $sizes to a direct module on ext4: byte-identical (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && $(declare -f all_same); sizes='$sizes' src='$src'; all_same '$work/mnt/in'"
check "  ... and no 'refuses O_DIRECT' fallback was needed on ext4" bash -c "! grep -q 'O_DIRECT' '$work/err'"
pulls=(); for n in $sizes; do pulls+=("$addr:ext4/in/f$n"); done
rcp --direct "${pulls[@]}" "$work/mnt/back/"; rc=$?
check "--direct pull of the same files back onto ext4: byte-identical (exit $rc)" \
  bash -c "[ $rc -eq 0 ] && $(declare -f all_same); sizes='$sizes' src='$src'; all_same '$work/mnt/back'"
# The page cache shows whether the data went direct: a buffered write leaves every page of the
# file cached, an O_DIRECT one none (but a tail page). Sources written with oflag=direct are not
# cached either, so a direct read leaves them so.
cached() { fincore -b -n -o RES "$1" 2>/dev/null | tr -d ' '; }
export -f cached
if command -v fincore > /dev/null; then
  dd if=/dev/urandom of="$src/big" bs=1M count=8 oflag=direct status=none
  # (measured before cmp, which reads through the page cache)
  rcp --direct "$src/big" "$addr:ext4/in/big"; rc=$?
  c1=$(cached "$src/big") c2=$(cached "$work/mnt/in/big")
  check "--direct push of 8 MiB: the source stays out of the page cache ($c1 B), so does the daemon's copy ($c2 B) (exit $rc)" \
    bash -c "[ $rc -eq 0 ] && [ '$c1' -le 65536 ] && [ '$c2' -le 65536 ] && cmp -s '$src/big' '$work/mnt/in/big'"
  # (cmp above cached the daemon's copy: dropped again, POSIX_FADV_DONTNEED)
  dd if=/dev/null of="$work/mnt/in/big" oflag=nocache conv=notrunc,fdatasync count=0 status=none
  rcp --direct "$addr:ext4/in/big" "$work/mnt/back/big"; rc=$?
  c3=$(cached "$work/mnt/in/big") c4=$(cached "$work/mnt/back/big")
  check "--direct pull of 8 MiB: read ($c3 B cached) and written ($c4 B) without the page cache (exit $rc)" \
    bash -c "[ $rc -eq 0 ] && [ '$c3' -le 65536 ] && [ '$c4' -le 65536 ] && cmp -s '$src/big' '$work/mnt/back/big'"
  rcp "$addr:ext4/in/big" "$work/mnt/back/big.buffered"; rc=$?
  check "  (control: the same pull without --direct fills the page cache)" \
    bash -c "[ $rc -eq 0 ] && [ \$(cached '$work/mnt/back/big.buffered') -ge 4194304 ]"
else
  echo "block_suite: ######## fincore missing: page-cache checks of --direct NOT RUN ########" >&2
fi
# ramfs refuses O_DIRECT (tmpfs too before Linux 6.6).
mkdir -p "$work/ramfs" && mount -t ramfs ramfs "$work/ramfs" && ramfs_ok=1 || ramfs_ok=0
if [ $ramfs_ok = 1 ]; then
  rcp --direct -v "$addr:ext4/in/f1048577" "$work/ramfs/"; rc=$?
  check "--direct onto ramfs (refuses O_DIRECT): buffered, said with -v, byte-identical (exit $rc)" \
    bash -c "[ $rc -eq 0 ] && cmp -s '$src/f1048577' '$work/ramfs/f1048577' && grep -q 'refuses O_DIRECT' '$work/err'"
  rcp --direct "$addr:ext4/in/f1048577" "$work/ramfs/quiet"; rc=$?
  check "  ... and without -v it is not said" bash -c "[ $rc -eq 0 ] && ! grep -q 'O_DIRECT' '$work/err'"
  umount "$work/ramfs"
else
  echo "block_suite: ######## cannot mount ramfs: the O_DIRECT fallback check NOT RUN ########" >&2
fi

stop_daemon
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
