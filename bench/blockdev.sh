#!/bin/bash
# bench/blockdev.sh — issue 13: buffered vs --direct on ext4 on loop devices, over TCP on
# 127.0.0.1, next to `dd iflag=direct | nc` and `rsync --copy-devices` (a device source).
# One run per row (the machine is shared: say the load with the table). Root only.
#
#   bench/blockdev.sh [BUILD_DIR] [MIB]        (default build, 512)
#
# Source: one random MIB-MiB file on ext4 on loop device 1; destination: ext4 on loop device 2,
# written with --fsync (and nc's output synced) so the buffered rows pay for their writeback.
# Before every row the source file's pages are dropped (POSIX_FADV_DONTNEED, dd oflag=nocache)
# so every row reads from the device. Columns: wall MB/s; CPU seconds per GiB (user+sys) of the
# client (sender) and the daemon (receiver).
set -eu
build=${1:-build} mib=${2:-512}
RCP=$build/rcp/rcp RCPD=$build/rcpd/rcpd
[ "$(id -u)" = 0 ] || { echo "blockdev.sh: needs root (loop devices)" >&2; exit 2; }
w=$(mktemp -d /var/tmp/rcp-bench-blk.XXXXXX)
loops=() pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for m in "$w/src" "$w/dst"; do mountpoint -q "$m" && umount "$m"; done
  for l in "${loops[@]}"; do losetup -d "$l"; done
  rm -rf "$w"
}
trap cleanup EXIT
# (sparse images; each row's copy is removed after it, and dst must hold the whole src device)
for side in src dst; do
  if [ $side = src ]; then truncate -s $((mib + 128))M "$w/$side.img"; else truncate -s $((mib * 2 + 384))M "$w/$side.img"; fi
  l=$(losetup -f --show "$w/$side.img"); loops+=("$l")
  mkfs.ext4 -q -F "$l"; mkdir -p "$w/$side"; mount "$l" "$w/$side"
done
dev_src=${loops[0]}
mkdir -p "$w/dst/buf" "$w/dst/dir" "$w/dst/nc" "$w/dst/rs"
dd if=/dev/urandom of="$w/src/f" bs=1M count="$mib" status=none conv=fsync
drop() { dd if=/dev/null of="$1" oflag=nocache conv=notrunc,fdatasync count=0 status=none; }
cat > "$w/rcpd.conf" <<TOML
[modules.buf]
path = "$w/dst/buf"
read_only = false
[modules.dir]
path = "$w/dst/dir"
read_only = false
direct = true
TOML
port=$((40000 + $$ % 10000))  # away from bench/run's 18470s and the suites' 20000-40000
"$RCPD" --config "$w/rcpd.conf" --listen 127.0.0.1 -P $port --tcp-port $((port + 1)) --transport tcp \
  > "$w/rcpd.log" 2>&1 &
dp=$!; pids+=("$dp")
for _ in $(seq 100); do grep -q ready "$w/rcpd.log" && break; sleep 0.05; done
ticks() { local f; read -ra f < <(sed 's/.*) //' "/proc/$1/stat"); echo $(( f[11] + f[12] + f[13] + f[14] )); }
hz=$(getconf CLK_TCK)
gib=$(echo "$mib / 1024" | bc -l)
row() {  # NAME WALL CLIENT_CPU DAEMON_CPU
  printf '| %s | %.0f | %.2f | %.2f |\n' "$1" "$(echo "$mib * 1.048576 / $2" | bc -l)" \
    "$(echo "$3 / $gib" | bc -l)" "$(echo "$4 / $gib" | bc -l)"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $mib MiB, kernel $(uname -r)"
echo
echo "| row | MB/s | client CPU-s/GiB | daemon (receiver) CPU-s/GiB |"
echo "|---|---|---|---|"
for mode in buffered direct; do
  drop "$w/src/f"
  d0=$(ticks "$dp")
  if [ $mode = direct ]; then opt=--direct mod=dir; else opt= mod=buf; fi
  /usr/bin/time -f '%e %U %S' -o "$w/t" "$RCP" $opt --fsync --transport tcp -P $port --tcp-port $((port + 1)) \
    "$w/src/f" "127.0.0.1:$mod/f" 2> "$w/err" || { cat "$w/err"; exit 1; }
  d1=$(ticks "$dp")
  read -r wall u s < "$w/t"
  cmp -s "$w/src/f" "$w/dst/$mod/f" || { echo "blockdev.sh: $mode copy differs" >&2; exit 1; }
  rm -f "$w/dst/$mod/f"
  row "rcp ${opt:+$opt }--fsync push (module direct = $([ $mode = direct ] && echo true || echo false))" "$wall" \
    "$(echo "$u + $s" | bc -l)" "$(echo "($d1 - $d0) / $hz" | bc -l)"
done
# dd iflag=direct | nc: the receiver syncs what it wrote (as --fsync does).
drop "$w/src/f"
/usr/bin/time -f '%e %U %S' -o "$w/tr" sh -c "nc -l -d 127.0.0.1 $((port + 3)) > '$w/dst/nc/f' && sync '$w/dst/nc/f'" &
rp=$!
for _ in $(seq 100); do ss -ltn | grep -q ":$((port + 3)) " && break; sleep 0.05; done
/usr/bin/time -f '%e %U %S' -o "$w/ts" sh -c "dd if='$w/src/f' iflag=direct bs=1M status=none | nc -N 127.0.0.1 $((port + 3))"
wait $rp
read -r wall u s < "$w/ts"; read -r rwall ru rs < "$w/tr"
cmp -s "$w/src/f" "$w/dst/nc/f" || { echo "blockdev.sh: nc copy differs: $(stat -c %s "$w/src/f" "$w/dst/nc/f" | tr '\n' ' ')" >&2; exit 1; }
rm -f "$w/dst/nc/f"
row "dd iflag=direct bs=1M \\| nc (receiver: nc > file; sync)" "$rwall" "$(echo "$u + $s" | bc -l)" "$(echo "$ru + $rs" | bc -l)"
# rsync --copy-devices reading the source's loop device itself (whole device: scaled to MIB).
if rsync --help 2>&1 | grep -q -- --copy-devices; then
  cat > "$w/rsyncd.conf" <<CONF
use chroot = no
[rs]
path = $w/dst/rs
read only = no
uid = root
gid = root
CONF
  rsync --daemon --no-detach --address 127.0.0.1 --port $((port + 4)) --config "$w/rsyncd.conf" &
  rsp=$!; pids+=("$rsp"); sleep 0.5
  umount "$w/src"
  dev_mib=$(( $(blockdev --getsize64 "$dev_src") / 1048576 ))
  /usr/bin/time -f '%e %U %S' -o "$w/t" rsync --copy-devices --whole-file "$dev_src" "rsync://127.0.0.1:$((port + 4))/rs/dev.img"
  r1=$(ticks "$rsp")
  read -r wall u s < "$w/t"
  cmp -s "$dev_src" "$w/dst/rs/dev.img" || { echo "blockdev.sh: rsync copy of the device differs" >&2; exit 1; }
  mount "$dev_src" "$w/src"
  printf '| rsync --copy-devices --whole-file DEVICE (%s MiB device; daemon CPU incl. its children) | %.0f | %.2f | %.2f |\n' \
    "$dev_mib" "$(echo "$dev_mib * 1.048576 / $wall" | bc -l)" "$(echo "($u + $s) * 1024 / $dev_mib" | bc -l)" \
    "$(echo "$r1 / $hz * 1024 / $dev_mib" | bc -l)"
fi
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
