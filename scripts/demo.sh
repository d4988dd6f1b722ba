#!/bin/bash
# The main job, from a fresh Debian 12 machine: installs what is missing, builds rcp, then
#  1. copies a sample file both ways over TCP on loopback (works on any machine), and
#  2. starts rcpd over RDMA — natively if this host has an RDMA device, otherwise inside a
#     QEMU guest with soft-RoCE — pulls and pushes a 48 MiB file with rcp, and prints the
#     throughput next to ib_read_bw with the same message size on the same link.
# usage: scripts/demo.sh [--no-rdma]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bin=$PWD/build
work=$(mktemp -d /tmp/rcp-demo.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/export" "$work/back"
echo
echo "=== TCP on loopback: 256 MiB each way"
head -c $((256 << 20)) /dev/urandom > "$work/sample.bin"
"$bin/rcpd/rcpd" --listen 127.0.0.1 --tcp-port 17472 -P 17471 --export demo="$work/export" 2> "$work/rcpd.log" &
for _ in $(seq 100); do grep -q ready "$work/rcpd.log" && break; sleep 0.05; done
"$bin/rcp/rcp" -v --tcp-port 17472 -P 17471 "$work/sample.bin" 127.0.0.1:demo/sample.bin
"$bin/rcp/rcp" -v --tcp-port 17472 -P 17471 127.0.0.1:demo/sample.bin "$work/back/"
cmp "$work/sample.bin" "$work/back/sample.bin" && echo "rcp: both copies verified byte for byte"
kill %1 2>/dev/null || true
rm -f "$work/sample.bin" "$work/back/sample.bin" "$work/export/sample.bin"
[ "${1:-}" = --no-rdma ] && exit 0
echo
echo "=== RDMA: 48 MiB pull and push with rcp, next to ib_read_bw (1 MiB messages)"
if ls /sys/class/infiniband 2>/dev/null | grep -q .; then
  bash bench/rdma_pair.sh "$bin"
else
  echo "(this kernel has no RDMA: booting a soft-RoCE guest, about 20 s)"
  tests/vm/rxe-run -- bash bench/rdma_pair.sh "$bin"
fi
